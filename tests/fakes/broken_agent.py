#!/usr/bin/env python3
"""An agent CLI that misbehaves on purpose (FAKE_AGENT_MODE): for the worker's fault tests.

garbage   writes a line that is not JSON
truncated writes half a JSON object, then exits
huge      writes one 10 MB line
silent    reads its input and never answers
exit      reads the first request and exits with status 3
"""

import os
import sys
import time

mode = os.environ.get("FAKE_AGENT_MODE", "garbage")
first = sys.stdin.readline()  # the driver's first message (initialize)
if mode == "garbage":
    sys.stdout.write("this is not json at all\n")
    sys.stdout.flush()
    time.sleep(30)
elif mode == "truncated":
    sys.stdout.write('{"type": "system", "subtype": "ini')
    sys.stdout.flush()
elif mode == "huge":
    sys.stdout.write('{"type": "assistant", "pad": "' + "x" * (10 * 1024 * 1024) + '"}\n')
    sys.stdout.flush()
    time.sleep(30)
elif mode == "silent":
    for _line in sys.stdin:
        pass
    time.sleep(30)
elif mode == "exit":
    sys.exit(3)
