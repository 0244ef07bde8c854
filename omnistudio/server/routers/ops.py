"""Operations: ``GET /health`` (200 once the engine is ready, else 503) and ``GET /metrics`` (Prometheus)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from omnistudio.protocol import PROTOCOL, EngineInfo, Health
from omnistudio.server.app import link_info, server_state
from omnistudio.server.metrics import CONTENT_TYPE

router = APIRouter()


@router.get("/health")
async def health(request: Request) -> JSONResponse:
    state = server_state(request)
    body = Health(status=state.status, detail=state.detail, protocol=PROTOCOL, active=state.admission.active,
                  max_queue=state.admission.max_queue)
    if state.link is not None:
        body.sample_rate = state.link.sample_rate
        body.engine = EngineInfo.model_validate(link_info(state))
    return JSONResponse(body.model_dump(exclude_none=True), status_code=200 if state.status == "ready" else 503)


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    state = server_state(request)
    return Response(state.metrics.render(state.link, state.admission.active, state.cache),
                    media_type=CONTENT_TYPE)
