"""An OTLP/HTTP receiver for transcope's export tests: it decodes each request with
the OpenTelemetry project's own Python protobuf classes (`opentelemetry-proto`), not
with the Rust code that encoded it, and appends what it acknowledged to a file.

    receiver.py PORT_FILE OUT_FILE [--port N] [--script 503,200,...] [--hang-on N]

Listens on 127.0.0.1 (on port N, else any free one) and then writes the port to
PORT_FILE. Answers the n-th POST
with the n-th status of --script (then 200); a 503 or 429 carries `Retry-After: 0`.
With --hang-on N, the N-th POST is read and never answered (the file HANG beside
OUT_FILE says it is). Each data point and log record of a request answered 200 is
written to OUT_FILE as one JSON line *before* the answer is sent: what is in the file
is exactly what the receiver acknowledged.
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def main():
    port_file, out_file = sys.argv[1], sys.argv[2]
    script, hang_on, port = [], None, 0
    args = sys.argv[3:]
    while args:
        flag, arg = args.pop(0), args.pop(0)
        if flag == "--script":
            script = [int(s) for s in arg.split(",") if s]
        elif flag == "--hang-on":
            hang_on = int(arg)
        elif flag == "--port":
            port = int(arg)
    lock = threading.Lock()
    seen = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                seen[0] += 1
                n = seen[0]
            if self.headers.get("Content-Type") != "application/x-protobuf":
                self.answer(415, b"")
                return
            if hang_on == n:
                with open(os.path.join(os.path.dirname(out_file), "HANG"), "w") as f:
                    f.write(str(n))
                time.sleep(3600)
                return
            status = script[n - 1] if n <= len(script) else 200
            if status != 200:
                self.answer(status, b"", {"Retry-After": "0"})
                return
            lines = []
            if self.path == "/v1/metrics":
                req = ExportMetricsServiceRequest.FromString(body)
                res = attrs(req.resource_metrics[0].resource.attributes)
                for rm in req.resource_metrics:
                    for sm in rm.scope_metrics:
                        for m in sm.metrics:
                            kind = m.WhichOneof("data")
                            for p in getattr(m, kind).data_points:
                                v = p.sum if kind == "histogram" else p.as_double
                                lines.append({
                                    "signal": "metric", "name": m.name, "unit": m.unit,
                                    "kind": kind,
                                    "temporality": getattr(m, kind).aggregation_temporality,
                                    "count": getattr(p, "count", None),
                                    "value": v, "time": p.time_unix_nano,
                                    "attrs": attrs(p.attributes), "resource": res,
                                })
                reply = ExportMetricsServiceResponse().SerializeToString()
            elif self.path == "/v1/logs":
                req = ExportLogsServiceRequest.FromString(body)
                for rl in req.resource_logs:
                    res = attrs(rl.resource.attributes)
                    for sl in rl.scope_logs:
                        for r in sl.log_records:
                            lines.append({
                                "signal": "log", "event": r.event_name,
                                "time": r.time_unix_nano, "body": value(r.body),
                                "attrs": attrs(r.attributes), "resource": res,
                            })
                reply = ExportLogsServiceResponse().SerializeToString()
            else:
                self.answer(404, b"")
                return
            with lock:
                with open(out_file, "a") as f:
                    for line in lines:
                        f.write(json.dumps(line) + "\n")
                    f.write(json.dumps({
                        "signal": "post", "path": self.path, "n": n,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                    }) + "\n")
            self.answer(200, reply, {"Content-Type": "application/x-protobuf"})

        def answer(self, status, body, headers=None):
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
