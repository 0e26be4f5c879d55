""":class:`AsyncServer`: a :class:`~telha_jobs.Server` started by
:meth:`~telha_jobs.aio.AsyncQueue.serve`, stopped without blocking the
event loop."""

from __future__ import annotations

import asyncio
import functools

from ._native import Server


class AsyncServer:
    """The gRPC server (and, with ``ui=True``, the operator page) of an
    embedded :class:`~telha_jobs.aio.AsyncQueue`, serving its store to other
    processes from this one. Stop it with ``await server.stop()`` or an
    ``async with`` block; ``server.server`` is the underlying
    :class:`~telha_jobs.Server`."""

    def __init__(self, server: Server) -> None:
        if not isinstance(server, Server):
            raise TypeError(f"AsyncServer wraps a telha_jobs.Server, got {type(server).__name__}")
        self.server = server

    @property
    def address(self) -> str:
        """``host:port`` it listens on."""
        return self.server.address

    @property
    def url(self) -> str:
        """The URL for :meth:`AsyncQueue.connect` / :func:`telha_jobs.connect`."""
        return self.server.url

    @property
    def metrics_address(self) -> str | None:
        """``host:port`` of the ``/metrics`` endpoint, if one was asked for."""
        return self.server.metrics_address

    @property
    def ui_url(self) -> str | None:
        """The operator web page's URL when served with ``ui=True``."""
        return self.server.ui_url

    @property
    def running(self) -> bool:
        return self.server.running

    async def stop(self, grace: float = 5.0) -> None:
        """Stop serving, off the event loop; calls in flight get ``grace``
        seconds to finish."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, functools.partial(self.server.stop, grace))

    async def __aenter__(self) -> AsyncServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
