"""Episodes: a policy acting in an environment (simulated or real) until it answers, the task it may have and
the checker that rewards it. Below agent, collect and serve, which all run episodes through ``play``."""

from lwm.rollout.loop import Episode, Policy, play, run_episodes
from lwm.rollout.task_env import TaskEnv, make_task_env
from lwm.rollout.tasks import Task, get_task

__all__ = ["Episode", "Policy", "Task", "TaskEnv", "get_task", "make_task_env", "play", "run_episodes"]
