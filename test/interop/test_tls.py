"""TLS interop: the example server (`dist/examples/serve.js`) with mutual TLS on gRPC (Triton's
`--grpc-use-ssl-mutual` options, as TSTRITON_* variables) and on HTTPS, against `tritonclient.grpc`,
`tritonclient.http` and `perf_analyzer`. The certificates are made by the `openssl` CLI in a temporary folder:
a CA, a server certificate for 127.0.0.1 and localhost, a client certificate, and a client certificate that
another CA signed.
"""
import subprocess

import numpy as np
import pytest
from geventhttpclient.response import HTTPConnectionClosed
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import start_server, stop_server

A = np.arange(8, dtype=np.float32).reshape(1, 8)
B = np.full((1, 8), 10, dtype=np.float32)


def openssl(folder, *args):
    subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)


def make_ca(folder, name):
    openssl(folder, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", "2", "-subj", f"/CN=tstriton test {name}", "-keyout", f"{name}.key", "-out", f"{name}.pem")


def make_leaf(folder, name, ca, extensions):
    (folder / f"{name}.ext").write_text(extensions)
    openssl(folder, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.csr")
    openssl(folder, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    make_ca(folder, "ca")
    make_ca(folder, "other_ca")
    make_leaf(folder, "server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    make_leaf(folder, "client", "ca", "extendedKeyUsage=clientAuth\n")
    make_leaf(folder, "stranger", "other_ca", "extendedKeyUsage=clientAuth\n")
    return {name: {"cert": str(folder / f"{name}.pem"), "key": str(folder / f"{name}.key")}
            for name in ("ca", "other_ca", "server", "client", "stranger")}


@pytest.fixture(scope="module")
def tls_server(certs):
    server, ca = certs["server"], certs["ca"]["cert"]
    running = start_server(env={
        "TSTRITON_GRPC_USE_SSL": "1", "TSTRITON_GRPC_USE_SSL_MUTUAL": "1",
        "TSTRITON_GRPC_SERVER_CERT": server["cert"], "TSTRITON_GRPC_SERVER_KEY": server["key"],
        "TSTRITON_GRPC_ROOT_CERT": ca,
        "TSTRITON_HTTP_USE_SSL": "1", "TSTRITON_HTTP_USE_SSL_MUTUAL": "1",
        "TSTRITON_HTTP_SERVER_CERT": server["cert"], "TSTRITON_HTTP_SERVER_KEY": server["key"],
        "TSTRITON_HTTP_ROOT_CERT": ca,
    })
    yield running
    stop_server(running)


def grpc_client(server, certs, identity="client", ca="ca"):
    """A tritonclient gRPC client over TLS trusting `ca`, presenting `identity`'s certificate (None: none)."""
    kwargs = {"root_certificates": certs[ca]["cert"]}
    if identity:
        kwargs.update(private_key=certs[identity]["key"], certificate_chain=certs[identity]["cert"])
    return grpcclient.InferenceServerClient(server.grpc_url, ssl=True, **kwargs)


def add_sub_inputs(module):
    inputs = [module.InferInput("a", [1, 8], "FP32"), module.InferInput("b", [1, 8], "FP32")]
    inputs[0].set_data_from_numpy(A)
    inputs[1].set_data_from_numpy(B)
    return inputs


def refusal(call):
    with pytest.raises(InferenceServerException) as info:
        call()
    return info.value


# ---- gRPC ----------------------------------------------------------------------------------------

def test_grpc_mutual_tls_client_infers_add_sub(tls_server, certs):
    client = grpc_client(tls_server, certs)
    try:
        assert client.is_server_live()
        assert client.is_model_ready("add_sub")
        result = client.infer("add_sub", add_sub_inputs(grpcclient))
        np.testing.assert_array_equal(result.as_numpy("add"), A + B)
        np.testing.assert_array_equal(result.as_numpy("sub"), A - B)
    finally:
        client.close()


@pytest.mark.parametrize("identity,ca", [(None, "ca"), ("stranger", "ca")],
                         ids=["no client certificate", "certificate from another CA"])
def test_grpc_client_the_server_cannot_verify_is_refused(tls_server, certs, identity, ca):
    client = grpc_client(tls_server, certs, identity, ca)
    try:
        assert refusal(client.is_server_live).status() == "StatusCode.UNAVAILABLE"
    finally:
        client.close()


def test_grpc_client_that_does_not_trust_the_server_is_refused(tls_server, certs):
    client = grpc_client(tls_server, certs, "client", "other_ca")
    try:
        assert refusal(client.is_server_live).status() == "StatusCode.UNAVAILABLE"
    finally:
        client.close()


def test_grpc_plaintext_client_is_refused(tls_server):
    client = grpcclient.InferenceServerClient(tls_server.grpc_url)
    try:
        assert refusal(client.is_server_live).status() == "StatusCode.UNAVAILABLE"
    finally:
        client.close()


def test_perf_analyzer_over_mutual_tls(tls_server, certs):
    cmd = ["perf_analyzer", "-m", "add_sub", "-u", tls_server.grpc_url, "-i", "grpc",
           "--shape", "a:16", "--shape", "b:16", "--concurrency-range", "1:1",
           "--measurement-mode", "count_windows", "--measurement-request-count", "20",
           "--stability-percentage", "1000", "--max-trials", "3",
           "--ssl-grpc-use-ssl", "true",
           "--ssl-grpc-root-certifications-file", certs["ca"]["cert"],
           "--ssl-grpc-private-key-file", certs["client"]["key"],
           "--ssl-grpc-certificate-chain-file", certs["client"]["cert"]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Concurrency: 1, throughput:" in out, out


# ---- HTTPS ---------------------------------------------------------------------------------------

def https_client(server, certs, identity="client"):
    options = {"ca_certs": certs["ca"]["cert"]}
    if identity:
        options.update(certfile=certs[identity]["cert"], keyfile=certs[identity]["key"])
    return httpclient.InferenceServerClient(server.http_url, ssl=True, ssl_options=options)


def test_https_mutual_tls_client_infers_add_sub(tls_server, certs):
    client = https_client(tls_server, certs)
    try:
        assert client.is_server_live()
        result = client.infer("add_sub", add_sub_inputs(httpclient))
        np.testing.assert_array_equal(result.as_numpy("add"), A + B)
        np.testing.assert_array_equal(result.as_numpy("sub"), A - B)
    finally:
        client.close()


@pytest.mark.parametrize("identity", [None, "stranger"], ids=["no client certificate", "certificate from another CA"])
def test_https_client_the_server_cannot_verify_is_refused(tls_server, certs, identity):
    client = https_client(tls_server, certs, identity)
    try:
        # The handshake (or, with TLS 1.3, the first read after it) fails: an ssl or socket error, or the connection
        # closed under the request by the server's alert; never an answer.
        with pytest.raises((OSError, HTTPConnectionClosed)):
            client.is_server_live()
    finally:
        client.close()


def test_plain_http_client_gets_no_answer(tls_server):
    client = httpclient.InferenceServerClient(tls_server.http_url)
    try:
        with pytest.raises(Exception):
            client.is_server_live()
    finally:
        client.close()
