"""A loop over a tensor's length: the trace unrolls it, so other input shapes fail check_inputs."""

import torch


def loop_in_traced_fn(x):
    result = x[0]
    for i in range(x.size(0)):
        result = result * x[i]
    return result


def double(x):
    return x * 2


inputs = [(torch.rand(4, 4),)]
traced_loop = torch.jit.trace(loop_in_traced_fn, (torch.rand(3, 4),), check_inputs=inputs)
traced_double = torch.jit.trace(double, (torch.rand(2),))
