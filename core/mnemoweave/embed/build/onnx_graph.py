"""A small helper for writing ONNX graphs node by node (used by the model converters)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 18
IR_VERSION = 8  # readable by every onnxruntime >= 1.20 that the project allows


class GraphBuilder:
    """Collects initializers and nodes; every node gets a unique output name."""

    def __init__(self) -> None:
        self.initializers: list[TensorProto] = []
        self.nodes: list[onnx.NodeProto] = []
        self._count = 0

    def weight(self, name: str, array: np.ndarray) -> str:
        """Add a named initializer and return its name."""
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, value: Any, dtype: type = np.float32) -> str:
        """Add an unnamed constant (scalar or list) and return its generated name."""
        self._count += 1
        return self.weight(f"const_{self._count}", np.array(value, dtype))

    def ints(self, *values: int) -> str:
        """A 1-D int64 constant, the form axes, shapes and slice bounds take."""
        return self.const(list(values), np.int64)

    def op(self, op_type: str, inputs: list[str], output: str | None = None, **attrs: Any) -> str:
        """Append a node and return the name of its (single) output."""
        self._count += 1
        output = output or f"{op_type}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [output], **attrs))
        return output

    def model(
        self,
        name: str,
        outputs: list[tuple[str, list[str | int]]],
        extra_opsets: dict[str, int] | None = None,
    ) -> onnx.ModelProto:
        """The finished model with int64 `input_ids`/`attention_mask` inputs [batch, seq]."""
        inputs = [
            helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
            for n in ("input_ids", "attention_mask")
        ]
        outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs]
        graph = helper.make_graph(self.nodes, name, inputs, outs, self.initializers)
        opsets = [helper.make_opsetid("", OPSET)]
        opsets += [helper.make_opsetid(d, v) for d, v in (extra_opsets or {}).items()]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="mnemoweave")
        model.ir_version = IR_VERSION
        return model
