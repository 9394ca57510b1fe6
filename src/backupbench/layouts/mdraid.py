"""md RAID arrays, named bb-<layout>-<token> in their superblock; created --assume-clean so
that no resync runs under the workload (recorded in the plan)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from backupbench.faults.plan import md_fault
from backupbench.faults.rules import LayoutFacts
from backupbench.layout_model import MD_MIN_MEMBERS, md_survives
from backupbench.layouts import filesystem
from backupbench.layouts.actions import Action, Guard, LayoutPlan, Requirement
from backupbench.layouts.naming import Names
from backupbench.layouts.specs import LayoutBase, power_of_two
from backupbench.schema import Flag, Size, whole_number


class MdRaid(LayoutBase):
    kind: Literal["mdraid"]
    level: Annotated[Literal[0, 1, 5, 6, 10], BeforeValidator(whole_number)] = Field(..., description="RAID level.")
    chunk: Size | None = Field(None, description="Chunk size, e.g. 64k [default: mdadm's, 512k]; a power of two "
                                                 "from 4 KiB to 1 GiB.")
    assume_clean: Flag = Field(True, description="--assume-clean: skip the initial resync, which would "
                                                 "otherwise compete with the workload.")

    @field_validator("chunk")
    @classmethod
    def _chunk(cls, value: int | None) -> int | None:
        return power_of_two(value, "chunk", 4096, 2**30, "the md driver's limits")

    def redundancy(self) -> int:
        return md_survives(self.level, len(self.devices))

    def fault_facts(self) -> LayoutFacts:
        return dataclasses.replace(super().fault_facts(), shape=f" (RAID {self.level})")

    @model_validator(mode="after")
    def _enough_devices(self) -> "MdRaid":
        needed = MD_MIN_MEMBERS[self.level]
        if len(self.devices) < needed:
            raise ValueError(f"RAID {self.level} needs at least {needed} devices, got {len(self.devices)}")
        return self


def plan(spec: MdRaid, names: Names) -> LayoutPlan:
    chunk = ("--chunk", f"{spec.chunk // 1024}K") if spec.chunk else ()
    clean = ("--assume-clean",) if spec.assume_clean else ()
    create = ("mdadm", "--create", names.md_device, "--run", "--metadata", "1.2", "--level", str(spec.level),
              "--raid-devices", str(len(spec.devices)), *chunk, *clean, "--name", names.md_name, *spec.devices)
    array = Action(f"make RAID {spec.level} {names.md_device} over {len(spec.devices)} devices", (create,),
                   (("mdadm", "--stop", names.md_device), ("mdadm", "--zero-superblock", *spec.all_devices())),
                   Guard(("mdadm", "--detail", "--export", names.md_device), names.md_name), destructive=True)
    fs_actions, mount = filesystem.on_device(spec.filesystem, names.md_device, names, raw=False)
    requirements = [Requirement("md raid", "kernel:md"), Requirement("mdadm", "tool:mdadm")]
    if spec.level in (5, 6):
        requirements.append(Requirement("raid456", "kernel:raid456"))
    if spec.filesystem:
        requirements += filesystem.requirements(spec.filesystem)
    notes = ("created with --assume-clean: no initial resync" if spec.assume_clean
             else "initial resync runs during the workload",)
    fault = md_fault(spec.fault, names.md_device, spec.devices, spec.redundancy()) if spec.fault is not None else None
    return LayoutPlan(spec.name, spec.kind, spec.all_devices(), (array, *fs_actions), tuple(requirements), mount,
                      notes=notes, fault=fault)
