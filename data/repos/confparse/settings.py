"""A server's settings, read from configuration text."""

from dataclasses import dataclass

from confparse import parse_config


@dataclass(frozen=True)
class Settings:
    host: str = "localhost"
    port: int = 8000
    debug: bool = False


def load_settings(text: str) -> Settings:
    """The ``[server]`` section as :class:`Settings`; missing keys keep their defaults."""
    server = parse_config(text).get("server", {})
    return Settings(
        host=server.get("host", Settings.host),
        port=int(server.get("port", Settings.port)),
        debug=server.get("debug", "no").lower() in ("1", "yes", "true", "on"),
    )
