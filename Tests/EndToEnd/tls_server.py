"""A TLS listener on 127.0.0.1 with a certificate made for the test: one a private CA signed for
127.0.0.1, for another name, or expired. It only completes handshakes; no client that checks the
certificate gets further."""

import datetime
import ipaddress
import socket
import ssl
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_certificates(directory: Path, kind: str) -> tuple[Path, Path, Path]:
    """(CA bundle, certificate, key) where the certificate is `kind`: "good" for 127.0.0.1,
    "other-name" for example.org, or "expired" for 127.0.0.1 but a year past its end."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("Sesame Test CA")).issuer_name(_name("Sesame Test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=800)).not_valid_after(now + datetime.timedelta(days=800))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("example.org")] if kind == "other-name" else [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    end = now - datetime.timedelta(days=365) if kind == "expired" else now + datetime.timedelta(days=30)
    certificate = (x509.CertificateBuilder().subject_name(_name("provider")).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(end - datetime.timedelta(days=60)).not_valid_after(end)
                   .add_extension(x509.SubjectAlternativeName(names), critical=False)
                   .sign(ca_key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


class TLSServer:
    """Accepts connections in a thread and does the server side of the handshake."""

    def __init__(self, certificate: Path, key: Path):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(certificate, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.handshakes = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            connection.settimeout(10)
            try:
                with self.context.wrap_socket(connection, server_side=True):
                    self.handshakes += 1
            except (ssl.SSLError, OSError):
                pass  # the client refused the certificate, as it should

    def close(self):
        self.sock.close()
