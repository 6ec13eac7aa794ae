"""Where the worker's Prometheus exporter listens: `SFUMATO_WORKER_METRICS_ADDRESS:SFUMATO_WORKER_METRICS_PORT`
(default 127.0.0.1:9101; port 0 turns it off).

A port in use is logged and the worker runs on without its exporter: a production host is scraped at the port
its Prometheus knows, and a silent move would hide it. With `SFUMATO_WORKER_METRICS_ANY_PORT_IF_TAKEN` (set by
`sfumato up` unless a port is configured) the exporter listens on a port the system picks instead and logs
it, so a second embedded platform on one machine exports its worker's metrics too.
"""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_PORT = 9101
ANY_PORT_IF_TAKEN_ENV = "SFUMATO_WORKER_METRICS_ANY_PORT_IF_TAKEN"


class ExporterSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SFUMATO_WORKER_METRICS_", extra="ignore")

    port: int = DEFAULT_PORT
    address: str = "127.0.0.1"
    any_port_if_taken: bool = False

    def port_configured(self) -> bool:
        return "port" in self.model_fields_set

    def candidate_ports(self) -> list[int]:
        """The ports to try in order: the configured one, then (when allowed) any free one."""
        return [self.port, 0] if self.any_port_if_taken else [self.port]
