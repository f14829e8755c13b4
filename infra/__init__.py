"""Shared infrastructure, the bottom layer (docs/architecture.md): the channel layer's groups
and sends (broadcast), the controllable clock, typed environment reads, prepared statements,
PostgreSQL's doorbell. It imports no first-party app; every app may import it."""
