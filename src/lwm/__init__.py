"""lwm: a toolkit for language world models, LLMs that simulate an agent's environment."""

from importlib.metadata import version

from lwm.backends import Backend, GenerateConfig, load_backend
from lwm.domains import Domain, get_domain
from lwm.envs import SimEnv
from lwm.envs.registration import register_envs
from lwm.model_options import ModelOptions, world_model
from lwm.types import Action, Context, Observation, Provenance, Trajectory, Turn
from lwm.worldmodel import WorldModel

__version__ = version("lwm")  # pyproject.toml says it, once
register_envs()  # gymnasium.make("lwm/Terminal-v0", ...)
__all__ = [
    "Action", "Backend", "Context", "Domain", "GenerateConfig", "ModelOptions", "Observation", "Provenance",
    "SimEnv", "Trajectory", "Turn", "WorldModel", "get_domain", "load_backend", "world_model",
]
