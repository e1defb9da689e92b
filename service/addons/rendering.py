"""Requests rendered where a template cannot hurt the service.

A body template is a program its author wrote: nested sections over a long list multiply
(100 values five sections deep is 10^10 renderings). One with a template is rendered in a
worker process of its own, given RENDER_SECONDS and RENDER_MEMORY_BYTES; past either, the worker
is killed and the default body is sent with a warning (the delivery still happens). The event
loop never renders one, so the API and the other integrations go on meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import resource
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, Final

import msgspec

from service.addons import formats

if TYPE_CHECKING:
    from collections.abc import Mapping

RENDER_SECONDS: Final = 2.0
RENDER_MEMORY_BYTES: Final = 1024 * 1024 * 1024  # the worker's address space
WORKERS: Final = 2
TEMPLATES: Final = ("bodyTemplate",)  # the parameters that are a user's template


def _limit() -> None:
    """In the worker, before it renders anything: bounded memory, a lower priority."""
    resource.setrlimit(resource.RLIMIT_AS, (RENDER_MEMORY_BYTES, RENDER_MEMORY_BYTES))
    with contextlib.suppress(OSError):
        os.nice(10)


def _render(
    provider: str, parameters: dict[str, str], event: dict[str, Any], unleash_url: str
) -> formats.Outgoing:
    return formats.render(provider, parameters, event, unleash_url=unleash_url)


def has_template(parameters: Mapping[str, Any]) -> bool:
    return any(str(parameters.get(name) or "").strip() for name in TEMPLATES)


class Rendering:
    """The workers that render templated requests, started when first needed."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    async def render(
        self,
        provider: str,
        parameters: Mapping[str, str],
        event: Mapping[str, Any],
        *,
        unleash_url: str,
    ) -> formats.Outgoing:
        if not has_template(parameters):  # no program of anyone's: rendered here, at once
            return formats.render(provider, parameters, event, unleash_url=unleash_url)
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=WORKERS,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_limit,
            )
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(
            self._pool, _render, provider, dict(parameters), dict(event), unleash_url
        )
        try:
            return await asyncio.wait_for(job, RENDER_SECONDS)
        except TimeoutError:
            reason = f"did not render within {RENDER_SECONDS:g} s"
        except (BrokenProcessPool, MemoryError):
            reason = "needed more memory than a template is given"
        self.close()  # the worker may still be at it: killed, and others started when needed
        plain = {k: v for k, v in parameters.items() if k not in TEMPLATES}
        sent = formats.render(provider, plain, event, unleash_url=unleash_url)
        warning = f"The bodyTemplate {reason}; sent the default body."
        return msgspec.structs.replace(sent, warnings=[*sent.warnings, warning])

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for process in list(getattr(pool, "_processes", {}).values()):
            with contextlib.suppress(Exception):
                process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
