/*
 * cleanup.c - registrations undone on SIGINT/SIGTERM/SIGHUP (see cleanup.h).
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"

/* Workers of one case (at most 64) and redis-server. */
#define CLEANUP_PIDS 80

/* volatile sig_atomic_t-like words: written by the main flow, read by the
 * handler of the same thread, so volatile is all the ordering needed. */
static volatile pid_t cleanup_pids[CLEANUP_PIDS];
static char cleanup_thp_path[128];
static char cleanup_thp_word[16];
static volatile int cleanup_thp_set;

void
cleanup_add_pid(pid_t pid)
{
	for (int i = 0; i < CLEANUP_PIDS; i++) {
		if (cleanup_pids[i] == 0) {
			cleanup_pids[i] = pid;
			return;
		}
	}
}

void
cleanup_forget_pid(pid_t pid)
{
	for (int i = 0; i < CLEANUP_PIDS; i++)
		if (cleanup_pids[i] == pid)
			cleanup_pids[i] = 0;
}

void
cleanup_set_thp(const char *path, const char *word)
{
	cleanup_thp_set = 0;
	if (!path || !word || strlen(path) >= sizeof cleanup_thp_path ||
	    strlen(word) >= sizeof cleanup_thp_word)
		return;
	strcpy(cleanup_thp_path, path);
	strcpy(cleanup_thp_word, word);
	cleanup_thp_set = 1;
}

void
cleanup_all(void)
{
	for (int i = 0; i < CLEANUP_PIDS; i++) {
		pid_t pid = cleanup_pids[i];

		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			cleanup_pids[i] = 0;
		}
	}
	if (cleanup_thp_set) {
		int fd = open(cleanup_thp_path, O_WRONLY);

		if (fd >= 0) {
			ssize_t n = write(fd, cleanup_thp_word,
					  strlen(cleanup_thp_word));

			(void)n;
			close(fd);
		}
		cleanup_thp_set = 0;
	}
}

static void
cleanup_on_signal(int sig)
{
	static const char msg[] =
		"tkshm_bench_procs: interrupted, cleaned up\n";
	ssize_t n;

	cleanup_all();
	n = write(2, msg, sizeof msg - 1);
	(void)n;
	_exit(128 + sig);
}

void
cleanup_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cleanup_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

void
cleanup_child(pid_t parent)
{
	struct sigaction sa;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* The parent may have died before the prctl. */
	if (getppid() != parent)
		_exit(1);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	for (int i = 0; i < CLEANUP_PIDS; i++)
		cleanup_pids[i] = 0;
	cleanup_thp_set = 0;
}
