"""Serving environments to agents and trainers: one session core, several faces (OpenEnv, Gymnasium)."""

from lwm.serve.session import ServeConfig, Session, StepResult

__all__ = ["ServeConfig", "Session", "StepResult"]
