"""Signed webhooks: an outbox written with each event, sent by the worker's sender loop.

- `outbox`: delivery rows, written in the transaction that records the event.
- `signing`: `Gatehouse-Signature: t=<unix>,v1=<hex>` (HMAC-SHA256 over "{t}.{body}").
- `targets`: which URLs may be called (no loopback or private address unless allowed).
- `sender`: sends due deliveries with retries and exponential backoff, every attempt kept.
"""
