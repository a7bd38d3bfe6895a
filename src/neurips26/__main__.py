import sys

from .core import warm

# In a job of a local run with a warm-start server (core/warm.py), a fork of that server runs
# the command; otherwise this process does.
rc = warm.run_through_server(sys.argv[1:])
if rc is not None:
    sys.exit(rc)

from .cli import finish, main  # noqa: E402

try:
    rc = main()
except SystemExit as exc:  # a step Lightning stopped on SIGTERM exits 143, not 0
    sys.exit(warm.exit_code(exc))
finish(rc)
