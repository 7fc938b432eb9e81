"""The largest GPU target a fit plans: one copy for every front end's option, parameter and schema."""

#: GPUs of one node (``--gpus``, ``gpus``)
MAX_GPUS = 64
#: memory of one GPU in GB (``--gpu-memory``, ``gpu_memory``)
MAX_GPU_MEMORY = 4096
