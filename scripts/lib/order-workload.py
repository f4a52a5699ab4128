"""What scripts/lib/order-sesamed runs sesamed through to see which code a working daemon uses: a
subscriber, an account imported, its token, the account listed and read, and a logout (whose
revocation fails against the offline provider, as a provider that is down would). Usage:
order-workload.py SOCKET."""

import json
import socket
import sys
import time


def connect(path):
    for _ in range(1200):  # under callgrind sesamed takes seconds to listen
        try:
            connection = socket.socket(socket.AF_UNIX)
            connection.connect(path)
            return connection
        except OSError:
            connection.close()
            time.sleep(0.1)
    sys.exit(f"order-workload: nothing listens on {path}")


class Peer:
    def __init__(self, path):
        self.connection = connect(path)
        self.pending = b""

    def call(self, method, parameters, more=False):
        message = {"method": method, "parameters": parameters}
        if more:
            message["more"] = True
        self.connection.sendall(json.dumps(message).encode() + b"\0")
        return self.reply()

    def reply(self):
        while b"\0" not in self.pending:
            chunk = self.connection.recv(65536)
            if not chunk:
                sys.exit("order-workload: sesamed hung up")
            self.pending += chunk
        message, self.pending = self.pending.split(b"\0", 1)
        reply = json.loads(message)
        if "error" in reply:
            sys.exit(f"order-workload: {reply['error']}")
        return reply.get("parameters", {})


def main(path):
    subscriber = Peer(path)
    subscriber.call("io.sesame.Events.Subscribe", {}, more=True)
    caller = Peer(path)
    caller.call("org.varlink.service.GetInfo", {})
    tokens = {"accessToken": "t" * 1024, "refreshToken": "r" * 64, "expiresIn": 86400}
    imported = caller.call("io.sesame.Accounts.ImportTokens", {"provider": "google", "subject": "order", "tokens": tokens})
    account = imported["account"]["id"]
    subscriber.reply()
    for _ in range(3):
        caller.call("io.sesame.Accounts.GetToken", {"account": account})
        caller.call("io.sesame.Accounts.List", {})
        caller.call("io.sesame.Accounts.Get", {"account": account})
    caller.call("io.sesame.Accounts.Logout", {"account": account})
    subscriber.reply()


if __name__ == "__main__":
    main(sys.argv[1])
