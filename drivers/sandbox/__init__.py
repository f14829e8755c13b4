"""The sandbox floor's parts that live on the host side: the egress proxy (`egress`) and
the HTTP/1.1 it speaks (`http1`), the stream plumbing under it (`streams`)."""
