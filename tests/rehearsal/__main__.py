from common.errors import run_entry_point
from tests.rehearsal.run import main

raise SystemExit(run_entry_point(main))
