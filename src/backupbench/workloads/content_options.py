"""The data-content options every workload shares (`data`, `compress`, `dedupe`, `pattern`):
both `run` flags and recipe keys, defined once, turned into an engines.content.DataContent."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from backupbench.engines.content import DataContent, DataKind
from backupbench.schema import Count, Pattern


class ContentOptions(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    data: DataKind = Field(
        "incompressible", description="What the bytes written are: incompressible (random, fresh for every "
        "block: what compressed or encrypted backup files are), compressible (see --compress, --dedupe) or "
        "pattern (one constant byte, see --pattern). compress/dedupe/pattern alone choose it.")
    compress: Count = Field(0, ge=0, le=99, description="Percent of every block that compresses away (50: 2:1 "
                                                         "data); fio's buffer_compress_percentage.",
                            json_schema_extra={"metavar": "PERCENT"})
    dedupe: Count = Field(0, ge=0, le=100, description="Percent of blocks that repeat an earlier block; fio's "
                                                        "dedupe_percentage.", json_schema_extra={"metavar": "PERCENT"})
    pattern: Pattern | None = Field(None, description="The constant byte of data = pattern, e.g. 0xaa "
                                                      "[default: 0xaa].", json_schema_extra={"metavar": "BYTE"})

    @model_validator(mode="before")
    @classmethod
    def _kind_from_the_rest(cls, values: Any) -> Any:
        if not isinstance(values, dict) or values.get("data") is not None:
            return values
        if values.get("pattern") is not None:
            return {**values, "data": "pattern"}
        if values.get("compress") or values.get("dedupe"):
            return {**values, "data": "compressible"}
        return values

    @model_validator(mode="after")
    def _consistent(self) -> "ContentOptions":
        if self.data == "incompressible" and (self.compress or self.dedupe):
            raise ValueError("compress and dedupe make the data compressible: drop data = 'incompressible' "
                             "(or set data = 'compressible')")
        if self.data == "pattern" and (self.compress or self.dedupe):
            raise ValueError("a constant pattern compresses and deduplicates all the way: compress and dedupe "
                             "do not apply to data = 'pattern'")
        if self.pattern is not None and self.data != "pattern":
            raise ValueError(f"pattern is the byte of data = 'pattern', not of data = '{self.data}'")
        return self

    def content(self) -> DataContent:
        if self.data == "pattern":
            return DataContent("pattern", pattern=0xAA if self.pattern is None else self.pattern)
        return DataContent(self.data, compress=self.compress, dedupe=self.dedupe)
