"""The hostile peer of test_hostile_user.py, run as a script as another uid (see `hostile`).

  nest SOCKET CONNECTIONS SECONDS   CONNECTIONS threads, each pipelining two wide calls and a deep
                                    one, reading the answers, reconnecting, until SECONDS are over
                                    (at most 10 rounds a second each); prints what was answered
  calls SOCKET                      calls from stdin (one JSON {method, parameters} a line) on one
                                    connection in turn; prints each error (or {}) as a line
  cliff SOCKET CONNECTIONS SECONDS SIZE
                                    CONNECTIONS threads, each pipelining 64 wide calls of SIZE
                                    bytes and reading their answers, until SECONDS are over;
                                    prints how many were answered
  unread SOCKET CONNECTIONS SECONDS  CONNECTIONS threads, each pipelining calls with large replies
                                    as fast as the connection takes them and never reading a
                                    reply, until SECONDS are over; prints how many were sent
"""

import json
import socket
import sys
import threading
import time

WIDE = (b'{"method":"io.sesame.Accounts.GetToken","parameters":{"account":['
        + b",".join([b"[]"] * 333_000) + b"]}}\0")  # 1 MB, under max_message_size (1 MiB)


def wide_call(size: int) -> bytes:
    """A GetToken call whose parameter is `[[],[],...]`, exactly `size` bytes before its NUL."""
    head, tail = b'{"method":"io.sesame.Accounts.GetToken","parameters":{"account":[', b"]}}"
    room = size - len(head) - len(tail)
    body = b",".join([b"[]"] * ((room + 1) // 3))  # "[]" and a comma each
    return head + body + b" " * (room - len(body)) + tail + b"\0"  # blanks are JSON whitespace

DEEP = b'{"method":"io.sesame.Accounts.List","parameters":{"x":' + b"[" * 500 + b"]" * 500 + b"}}\0"


def read_reply(sock: socket.socket, buffer: bytearray) -> dict | None:
    """The next NUL-terminated reply, or None when the connection closed first."""
    while (end := buffer.find(b"\0")) < 0:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buffer += chunk
    message = bytes(buffer[:end])
    del buffer[:end + 1]
    return json.loads(message)


def in_threads(attack, connections: int):
    """Runs `attack` on `connections` threads at once and waits for them all."""
    threads = [threading.Thread(target=attack) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def nest(path: str, connections: int, seconds: float):
    deadline = time.monotonic() + seconds
    counts, lock = {"rounds": 0}, threading.Lock()

    def count(outcome: str):
        with lock:
            counts[outcome] = counts.get(outcome, 0) + 1

    def attack():
        while time.monotonic() < deadline:
            paced = time.monotonic() + 0.1
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(300)
                sock.connect(path)
                sock.sendall(WIDE + WIDE + DEEP)
                buffer = bytearray()
                for _ in range(2):
                    wide = read_reply(sock, buffer)
                    count(f"wide: {(wide or {}).get('error', wide)}")
                deep = read_reply(sock, buffer)
                closed = read_reply(sock, buffer) is None
                reason = ((deep or {}).get("parameters") or {}).get("reason")
                count(f"deep: {(deep or {}).get('error', deep)}: {reason}, {'then closed' if closed else 'left open'}")
                count("rounds")
            time.sleep(max(0.0, paced - time.monotonic()))

    in_threads(attack, connections)
    print(json.dumps(counts), flush=True)


def cliff(path: str, connections: int, seconds: float, size: int):
    deadline = time.monotonic() + seconds
    calls = wide_call(size) * 64
    answered, lock = [0], threading.Lock()

    def attack():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)  # blocking: a queue kept full by churn is waited out, not failed on
            sock.settimeout(300)
            buffer = bytearray()
            while time.monotonic() < deadline:
                try:
                    sock.sendall(calls)
                except OSError:
                    return  # sesamed refused or closed the connection: the attack on it is over
                for _ in range(64):
                    if read_reply(sock, buffer) is None:
                        return
                    with lock:
                        answered[0] += 1

    in_threads(attack, connections)
    print(json.dumps({"answered": answered[0]}), flush=True)


# A call whose reply is large (the interface's description, a few KiB): the replies fill the
# connection's buffers after a few calls.
DESCRIBE = b'{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"io.sesame.Accounts"}}\0'


def unread(path: str, connections: int, seconds: float):
    deadline = time.monotonic() + seconds
    sent, lock = [0], threading.Lock()

    def attack():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)  # blocking: a queue kept full by churn is waited out, not failed on
            sock.settimeout(0.2)  # a full buffer: try again until the time is over, never read
            batch = DESCRIBE * 64
            while time.monotonic() < deadline:
                try:
                    sock.sendall(batch)
                except TimeoutError:
                    continue
                except OSError:
                    return  # sesamed closed the connection: the attack on it is over
                with lock:
                    sent[0] += 64

    in_threads(attack, connections)
    print(json.dumps({"sent": sent[0]}), flush=True)


def calls_in_turn(path: str):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(300)
        sock.connect(path)
        buffer = bytearray()
        for line in sys.stdin:
            sock.sendall(line.strip().encode() + b"\0")
            reply = read_reply(sock, buffer)
            # Only what an error says: never a reply's parameters, which could carry tokens.
            answer = {"error": reply["error"], "parameters": reply.get("parameters")} if "error" in reply else {}
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "nest":
        nest(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1] == "cliff":
        cliff(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "unread":
        unread(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1] == "calls":
        calls_in_turn(sys.argv[2])
