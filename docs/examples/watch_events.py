#!/usr/bin/env python3
"""Prints sesamed's session events as they happen, one line each, with the PyPI `varlink` client
(pip install varlink) and nothing of Sesame's own: io.sesame.Events is plain Varlink.

    watch_events.py [COUNT]     stop after COUNT events (default: run until interrupted)

The socket is $SESAME_SOCKET, or the system daemon's /run/sesame/io.sesame."""

import os
import sys

import varlink


def main() -> int:
    address = "unix:" + os.environ.get("SESAME_SOCKET", "/run/sesame/io.sesame")
    count = int(sys.argv[1]) if len(sys.argv) > 1 else None
    printed = 0
    with varlink.Client(address=address) as client, client.open("io.sesame.Events") as events:
        for reply in events.Subscribe(_more=True):
            if "ready" in reply:
                print(f"ready after sequence {reply['ready']['sequence']}", flush=True)
            elif "resync" in reply:
                print(f"resync: {len(reply['resync']['accounts'])} accounts", flush=True)
            elif "event" in reply:
                event = reply["event"]
                print(f"{event['sequence']} {event['kind']} {event['account']} {event['state']}", flush=True)
                printed += 1
                if printed == count:
                    return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
