import logging
import os
import sys

from .cli import main

rc = main()
# A finished job has ended its MLflow run and written its outputs atomically; tearing down
# torch's and MLflow's modules at exit would add about a second to every job, so the process
# ends here once its streams are flushed. Errors (SystemExit, exceptions) exit the usual way.
logging.shutdown()
sys.stdout.flush()
sys.stderr.flush()
os._exit(rc or 0)
