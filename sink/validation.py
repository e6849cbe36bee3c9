"""Validation of a chat event as Spark column expressions, derived from the msgspec model.

The rules are read from :class:`schemas.chat_event.ChatEvent` through ``msgspec.inspect`` (types,
required fields, defaults, ``min_length``/``ge``/... constraints) and the value types from
:func:`schemas.spark.chat_event_schema`, so nothing here repeats a field. The JSON is parsed once into
a Spark VARIANT, which keeps the JSON type of every value: a string ``"123"`` where an integer belongs
is rejected exactly as msgspec rejects it (Spark's ``from_json`` would quietly coerce some of these).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from schemas.chat_event import ChatEvent
from schemas.spark import chat_event_schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


@dataclass(frozen=True)
class FieldRule:
    """What a valid value of one field looks like."""

    name: str
    json_type: str  # 'string' | 'integer' | 'boolean' | 'object of strings'
    required: bool  # must be present (no default)
    nullable: bool  # JSON null allowed
    default: Any  # used when absent (not required)
    min_length: int | None = None
    max_length: int | None = None
    ge: int | None = None
    gt: int | None = None
    le: int | None = None
    lt: int | None = None
    pattern: str | None = None


def _unwrap(tp: Any) -> Any:
    return tp.type if isinstance(tp, msgspec.inspect.Metadata) else tp


def field_rules() -> tuple[FieldRule, ...]:
    """One rule per field of the chat event, in contract order."""
    rules = []
    for f in msgspec.inspect.type_info(ChatEvent).fields:  # type: ignore[attr-defined]
        tp = _unwrap(f.type)
        nullable = False
        if isinstance(tp, msgspec.inspect.UnionType):
            rest = [_unwrap(t) for t in tp.types if not isinstance(t, msgspec.inspect.NoneType)]
            if len(rest) != 1:
                raise TypeError(f"field {f.name}: unsupported union {tp!r}")
            tp, nullable = rest[0], True
        if f.default_factory is not msgspec.NODEFAULT:
            default = f.default_factory()
        else:
            default = None if f.default is msgspec.NODEFAULT else f.default
        common: dict[str, Any] = {"name": f.name, "required": f.required, "nullable": nullable}
        if isinstance(tp, msgspec.inspect.StrType):
            rules.append(
                FieldRule(
                    json_type="string",
                    default=default,
                    min_length=tp.min_length,
                    max_length=tp.max_length,
                    pattern=tp.pattern,
                    **common,
                )
            )
        elif isinstance(tp, msgspec.inspect.IntType):
            if tp.multiple_of is not None:
                raise TypeError(f"field {f.name}: multiple_of is not supported")
            rules.append(
                FieldRule(
                    json_type="integer", default=default, ge=tp.ge, gt=tp.gt, le=tp.le, lt=tp.lt, **common
                )
            )
        elif isinstance(tp, msgspec.inspect.BoolType):
            rules.append(FieldRule(json_type="boolean", default=default, **common))
        elif (
            isinstance(tp, msgspec.inspect.DictType)
            and isinstance(_unwrap(tp.key_type), msgspec.inspect.StrType)
            and isinstance(_unwrap(tp.value_type), msgspec.inspect.StrType)
            and tp.min_length is None
            and tp.max_length is None
        ):
            rules.append(FieldRule(json_type="object of strings", default=default, **common))
        else:
            raise TypeError(f"field {f.name}: no Spark validation for {tp!r}")
    return tuple(rules)


def _type_ok(rule: FieldRule, vtype: Column, raw: Column) -> Column:
    """``vtype`` is ``schema_of_variant`` of the value (e.g. STRING, BIGINT, BOOLEAN, OBJECT<...>)."""
    from pyspark.sql import functions as F

    if rule.json_type == "string":
        return vtype == F.lit("STRING")
    if rule.json_type == "integer":
        return vtype == F.lit("BIGINT")
    if rule.json_type == "boolean":
        return vtype == F.lit("BOOLEAN")
    values = F.map_values(F.try_variant_get(raw, "$", "map<string,variant>"))
    return vtype.startswith("OBJECT<") & F.forall(values, lambda v: F.schema_of_variant(v) == F.lit("STRING"))


def _constraint_failures(rule: FieldRule, value: Column) -> list[tuple[Column, str]]:
    from pyspark.sql import functions as F

    name = f"field `{rule.name}`"
    out: list[tuple[Column, str]] = []
    if rule.min_length is not None:
        out.append((F.char_length(value) < rule.min_length, f"{name}: shorter than {rule.min_length}"))
    if rule.max_length is not None:
        out.append((F.char_length(value) > rule.max_length, f"{name}: longer than {rule.max_length}"))
    if rule.pattern is not None:
        out.append((~value.rlike(rule.pattern), f"{name}: does not match {rule.pattern!r}"))
    if rule.ge is not None:
        out.append((value < rule.ge, f"{name}: less than {rule.ge}"))
    if rule.gt is not None:
        out.append((value <= rule.gt, f"{name}: not greater than {rule.gt}"))
    if rule.le is not None:
        out.append((value > rule.le, f"{name}: greater than {rule.le}"))
    if rule.lt is not None:
        out.append((value >= rule.lt, f"{name}: not less than {rule.lt}"))
    return out


def _default(rule: FieldRule) -> Column:
    from pyspark.sql import functions as F

    if isinstance(rule.default, dict):
        return F.create_map(*[F.lit(x) for kv in rule.default.items() for x in kv])
    return F.lit(rule.default)


def validate(df: DataFrame, value: str = "value") -> DataFrame:
    """``df`` plus ``event`` (struct typed as ``chat_event_schema()``) and ``reason`` for its binary
    ``value`` column.

    ``reason`` is null for a valid event, else a one-line explanation of the first problem found;
    ``event`` is only meaningful when ``reason`` is null (absent fields with defaults are filled in).
    The JSON is parsed once; each stage is its own projection so nothing is evaluated twice.
    """
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in chat_event_schema().fields}
    rules = field_rules()
    keep = [F.col(c) for c in df.columns]
    doc = F.col("_v_doc")
    staged = df.withColumn("_v_doc", F.try_parse_json(F.col(value).cast("string")))
    staged = staged.select(
        *keep,
        doc,
        F.schema_of_variant(doc).alias("_v_doctype"),
        *[F.try_variant_get(doc, f"$.{r.name}", "variant").alias(f"_v_raw_{r.name}") for r in rules],
    )
    staged = staged.select(
        "*", *[F.schema_of_variant(F.col(f"_v_raw_{r.name}")).alias(f"_v_type_{r.name}") for r in rules]
    )
    reasons = [
        F.when(F.col(value).isNull(), F.lit("empty record (no value)")),
        F.when(~F.is_valid_utf8(F.col(value).cast("string")), F.lit("not UTF-8")),
        F.when(doc.isNull(), F.lit("not JSON")),
        F.when(~F.col("_v_doctype").startswith("OBJECT<"), F.lit("not a JSON object")),
    ]
    fields = []
    for rule in rules:
        raw, vtype = F.col(f"_v_raw_{rule.name}"), F.col(f"_v_type_{rule.name}")
        typed = F.try_variant_get(raw, "$", types[rule.name].simpleString())
        name = f"field `{rule.name}`"
        absent = raw.isNull()
        is_null = vtype == F.lit("VOID")
        if rule.required:
            reasons.append(F.when(absent, F.lit(f"missing {name}")))
        if not rule.nullable:
            reasons.append(F.when(is_null, F.lit(f"{name} is null")))
        mistyped = ~absent & ~is_null & ~_type_ok(rule, vtype, raw)
        if rule.json_type == "object of strings":
            message = F.lit(f"{name}: expected an object of strings")
        else:
            message = F.concat(F.lit(f"{name}: expected {rule.json_type}, got "), F.lower(vtype))
        reasons.append(F.when(mistyped, message))
        for failed, msg in _constraint_failures(rule, typed):
            reasons.append(F.when(~absent & ~is_null & ~mistyped & failed, F.lit(msg)))
        if rule.default is not None and not rule.required:
            typed = F.when(absent, _default(rule).cast(types[rule.name])).otherwise(typed)
        fields.append(typed.alias(rule.name))
    return staged.select(*keep, F.struct(*fields).alias("event"), F.coalesce(*reasons).alias("reason"))
