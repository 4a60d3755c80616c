"""Inference about the parameters of a fitted model.

- ``laplace``: Laplace uncertainty from the objective's curvature;
- ``nuts``: the No-U-Turn sampler of TensorFlow Probability and its ``Samples``;
- ``sampler``: the driver of NUTS for a model (``model.sample``, the mixture's
  ``predict``).
"""
