"""`repoos show`: the code generated for a kernel in a schedule, C or MLIR."""

from __future__ import annotations

import argparse

from repoos_agent.codegen.c import generate_c
from repoos_agent.codegen.mlir import generate_mlir
from repoos_agent.codegen.passes import transformed_nest
from repoos_agent.errors import NotAnalyzableError
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.legality import prove_legal
from repoos_agent.model import Signature
from repoos_agent.schedule import ScheduleError
from repoos_agent.target import resolve_target
from repoos_agent.tracks import named_track


def command_show(args: argparse.Namespace) -> int:
    try:
        target = resolve_target(args.target, [parse_arg_spec(text) for text in args.arg])
    except NotAnalyzableError as refused:
        track = named_track(refused.track)
        if track is None or track.show is None:
            raise
        return track.show(args)  # a function another track took from the loop model: that track prints its code
    kernel = target.kernel
    proof = prove_legal(kernel, args.schedule or "", args.allow_reassociation)
    if not proof.legal:
        raise ScheduleError(proof.feedback.splitlines()[0])
    signature = Signature.of_values(kernel, target.inputs(args.size))  # element types: a user kernel's from its --arg specs
    if args.mlir:
        print(generate_mlir(kernel, signature, transformed_nest(kernel, proof.lowered, signature)).text, end="")
    else:
        print(generate_c(kernel, signature, proof.lowered).text, end="")
    return 0
