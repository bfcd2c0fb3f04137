"""What setup.py needs beyond setuptools to build tkshm._tkshm with the C
library compiled in: where the library's sources are (ctree), which Debian
libraries it links (deps), and the setuptools commands that use them
(commands).  Imported by setup.py only; never installed."""
