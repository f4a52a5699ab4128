#!/usr/bin/python3
"""A Varlink peer the trust tests run as other users (under setpriv): standard library only, so
the system python3 runs it for any uid. Prints what it got as JSON on stdout.

    peer.py call SOCKET METHOD PARAMETERS_JSON      one call, its reply
    peer.py stream SOCKET METHOD PARAMETERS_JSON    one call with `more`; a line per reply
    peer.py watch SOCKET                            Subscribe; one line per reply until killed
    peer.py flood SOCKET N                          N connections, one GetInfo each; counts, then
                                                    holds them open until stdin closes
    peer.py subscribe-flood SOCKET N                N connections, one Subscribe each; likewise
"""

import json
import socket
import sys


def connect(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.connect(path)
    return sock


def send(sock, method, parameters=None, more=False):
    message = {"method": method, "parameters": parameters or {}}
    if more:
        message["more"] = True
    sock.sendall(json.dumps(message).encode() + b"\0")


def replies(sock):
    buffer = b""
    while True:
        while b"\0" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                return
            buffer += chunk
        message, buffer = buffer.split(b"\0", 1)
        yield json.loads(message)


def first_reply(sock):
    try:
        return next(replies(sock), {"error": "closed"})
    except (ConnectionResetError, BrokenPipeError):
        return {"error": "reset"}


def flood(path, count, method, parameters, more):
    held, outcomes = [], {}
    for _ in range(count):
        sock = connect(path)
        try:
            send(sock, method, parameters, more)
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = first_reply(sock)
        outcome = reply.get("error", "served")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if outcome == "served":
            held.append(sock)
        else:
            sock.close()
    print(json.dumps(outcomes), flush=True)
    sys.stdin.read()  # hold the served connections until the test lets go


def main():
    command, path = sys.argv[1], sys.argv[2]
    if command == "call":
        sock = connect(path)
        send(sock, sys.argv[3], json.loads(sys.argv[4]))
        print(json.dumps(first_reply(sock)), flush=True)
    elif command == "stream":
        sock = connect(path)
        send(sock, sys.argv[3], json.loads(sys.argv[4]), more=True)
        sock.settimeout(None)
        for reply in replies(sock):
            print(json.dumps(reply), flush=True)
    elif command == "watch":
        sock = connect(path)
        send(sock, "io.sesame.Events.Subscribe", {}, more=True)
        sock.settimeout(None)
        for reply in replies(sock):
            print(json.dumps(reply), flush=True)
    elif command == "flood":
        flood(path, int(sys.argv[3]), "org.varlink.service.GetInfo", {}, more=False)
    elif command == "subscribe-flood":
        flood(path, int(sys.argv[3]), "io.sesame.Events.Subscribe", {}, more=True)


if __name__ == "__main__":
    main()
