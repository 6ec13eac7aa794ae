"""The job spec: the one contract between the platform and the trainer.

Importing this package must never import torch: the server validates specs with it. Every rule a
user can break is checked here, so a job the trainer cannot run is refused with a message naming
the field before anything is stored or allocated. One module per section; the names below are the
public ones (``from trainer.spec import JobSpec, parse_spec``).
"""

from trainer.spec.algorithm import ALGORITHM_OPTIONS, ALGORITHMS, AlgorithmSpec
from trainer.spec.base import (
    BUILTIN_FAMILIES,
    BUILTIN_MODEL_PATH,
    BUILTIN_PROMPT_SOURCES,
    BUILTIN_SHAPES_PATH,
    MODEL_REWARDS,
    PIXEL_REWARDS,
    REMOTE_REWARD,
    REWARD_ENTRY_POINT_GROUP,
    SERVICE_REWARD,
    SpecError,
    known_rewards,
)
from trainer.spec.executor import (
    EXECUTOR_OPTIONS,
    EXECUTORS,
    FSDP_EXECUTORS,
    OPTION_MODELS,
    DigenrlOptions,
    ExecutorOptions,
    ExecutorSpec,
    JaggOptions,
    JaggRetainOptions,
    JaggReweightOptions,
    LeanRetainOptions,
    LeanReweightOptions,
    NativeOptions,
    default_options,
)
from trainer.spec.job import (
    JobSpec,
    json_schema,
    parse_spec,
    retained_graph_bound,
    spec_errors,
    stored_spec,
    with_executor,
)
from trainer.spec.judge_options import VLM_JUDGE
from trainer.spec.model import FAMILY_OPTIONS, PIPELINE_FAMILIES, ModelSpec, names_hub_model
from trainer.spec.sections import (
    CheckpointSpec,
    PoolSpec,
    PoolsSpec,
    PromptsSpec,
    ResourcesSpec,
    RetrySpec,
    RewardSpec,
    SamplesSpec,
)

__all__ = [
    "ALGORITHMS",
    "ALGORITHM_OPTIONS",
    "BUILTIN_FAMILIES",
    "BUILTIN_MODEL_PATH",
    "BUILTIN_PROMPT_SOURCES",
    "BUILTIN_SHAPES_PATH",
    "EXECUTORS",
    "EXECUTOR_OPTIONS",
    "FAMILY_OPTIONS",
    "FSDP_EXECUTORS",
    "MODEL_REWARDS",
    "OPTION_MODELS",
    "PIPELINE_FAMILIES",
    "PIXEL_REWARDS",
    "REMOTE_REWARD",
    "REWARD_ENTRY_POINT_GROUP",
    "SERVICE_REWARD",
    "VLM_JUDGE",
    "AlgorithmSpec",
    "CheckpointSpec",
    "DigenrlOptions",
    "ExecutorOptions",
    "ExecutorSpec",
    "JaggOptions",
    "JaggRetainOptions",
    "JaggReweightOptions",
    "JobSpec",
    "LeanRetainOptions",
    "LeanReweightOptions",
    "ModelSpec",
    "NativeOptions",
    "PoolSpec",
    "PoolsSpec",
    "PromptsSpec",
    "ResourcesSpec",
    "RetrySpec",
    "RewardSpec",
    "SamplesSpec",
    "SpecError",
    "default_options",
    "json_schema",
    "known_rewards",
    "names_hub_model",
    "parse_spec",
    "retained_graph_bound",
    "spec_errors",
    "stored_spec",
    "with_executor",
]
