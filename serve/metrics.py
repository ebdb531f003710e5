"""The server's Prometheus metrics, in a registry of its own (nothing global, so two apps in one process —
tests — do not share counters): requests by route and status, latency by route, questions by the answer's
status, the version served and how many times it switched, and the process's memory, CPU and open files."""

from __future__ import annotations

import threading

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("zan_requests", "HTTP requests answered", ["route", "status"], registry=self.registry)
        self.latency = Histogram(
            "zan_request_seconds", "Time to answer a request", ["route"], buckets=BUCKETS, registry=self.registry
        )
        self.version = Gauge(
            "zan_version_served", "1 for the published version being served", ["version"], registry=self.registry
        )
        self.switches = Counter(
            "zan_version_switches", "Times a newly published version was swapped in", registry=self.registry
        )
        self.lookups = Counter(
            "zan_lookups", "Questions answered, by the answer's status", ["status"], registry=self.registry
        )
        ProcessCollector(registry=self.registry)  # memory, CPU seconds, open files of this process
        PlatformCollector(registry=self.registry)
        self._served: str | None = None
        self._lock = threading.Lock()

    def observe(self, route: str, status: int, seconds: float) -> None:
        self.requests.labels(route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def serving(self, version: str | None, switched: bool = False) -> None:
        with self._lock:
            if self._served is not None:
                self.version.remove(self._served)
            self._served = str(version)
            self.version.labels(self._served).set(1)
            if switched:
                self.switches.inc()

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
