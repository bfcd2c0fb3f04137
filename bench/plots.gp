# plots.gp - the PNG plots of bench/results, run by bench/report.py:
#
#   gnuplot -e "datadir='D'; outdir='O'; term='pngcairo'; have_check=1; ..." plots.gp
#
# report.py writes the data files into datadir and sets have_X to 1 for
# each file it wrote, so a plot whose data was not measured is not drawn
# (rather than drawn empty).  Missing points are NaN.
#
#   check.dat    label ns_1key ns_100k      -> ns_per_check.png
#   algos.dat    label ns_1key ns_100k      -> ns_per_algo.png
#   scale.dat    procs tkshm_uniform mutex_uniform tkshm_hot mutex_hot
#                (decisions/s)              -> decisions_vs_procs.png
#   p999.dat     the same columns, p99.9 ns -> p999_vs_procs.png
#   sigstop.dat  label before during after (decisions/s) -> sigstop.png

if (term eq 'pngcairo') {
	set terminal pngcairo size 900,540 font ",10" noenhanced
} else {
	set terminal png size 900,540 noenhanced
}
set datafile missing "NaN"
set grid ytics
set key outside right top

# Bars: one cluster per label, 1 key and 100k keys side by side.
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -30 left

if (have_check) {
	set output outdir.'/ns_per_check.png'
	set title 'One check, one thread: tkshm next to the ideal floor (median ns, lower is better)'
	set ylabel 'ns per check'
	set yrange [0:*]
	plot datadir.'/check.dat' using 2:xtic(1) title '1 key', \
	     '' using 3 title '100k keys'
}

if (have_algos) {
	set output outdir.'/ns_per_algo.png'
	set title 'One check of each algorithm, explicit now (median ns, lower is better)'
	set ylabel 'ns per check'
	set yrange [0:*]
	plot datadir.'/algos.dat' using 2:xtic(1) title '1 key', \
	     '' using 3 title '100k keys'
}

if (have_sigstop) {
	set output outdir.'/sigstop.png'
	set title 'Decisions/s while one process is stopped (SIGSTOP)'
	set ylabel 'decisions/s'
	set yrange [0:*]
	set format y '%.0s%c'
	plot datadir.'/sigstop.dat' using 2:xtic(1) title 'before', \
	     '' using 3 title 'during', '' using 4 title 'after'
}

# Lines: against the number of processes, both axes logarithmic.
set style data linespoints
set xtics norotate
set logscale x 2
set logscale y
set xlabel 'processes'
set yrange [*:*]
set format y '%.0s%c'

if (have_scale) {
	set output outdir.'/decisions_vs_procs.png'
	set title 'Decisions per second, all processes together (higher is better)'
	set ylabel 'decisions/s'
	plot datadir.'/scale.dat' using 1:2 title 'tkshm, 100k keys' lw 2 pt 7, \
	     '' using 1:3 title 'mutex, 100k keys' lw 2 pt 5, \
	     '' using 1:4 title 'tkshm, 1 hot key' lw 2 pt 7 dt 2, \
	     '' using 1:5 title 'mutex, 1 hot key' lw 2 pt 5 dt 2
}

if (have_p999) {
	set output outdir.'/p999_vs_procs.png'
	set title 'p99.9 latency of one decision (lower is better)'
	set ylabel 'p99.9, ns'
	plot datadir.'/p999.dat' using 1:2 title 'tkshm, 100k keys' lw 2 pt 7, \
	     '' using 1:3 title 'mutex, 100k keys' lw 2 pt 5, \
	     '' using 1:4 title 'tkshm, 1 hot key' lw 2 pt 7 dt 2, \
	     '' using 1:5 title 'mutex, 1 hot key' lw 2 pt 5 dt 2
}
