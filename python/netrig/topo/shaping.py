"""What a link does to traffic, as the topology file's schema says: `Shaping` (one
optional field per key of the link-spec schema, `netrig.link.spec`, owned by
netrig-link; each value checked and kept as the user wrote it), its AQM and
Gilbert-Elliott blocks (`Aqm`, `GeModel`), and `LinkSpec`, a link as written (its ends,
name, addresses, shaping for both directions and per direction, OSPF cost and area).
Resolving a direction to numbers is `netrig.topo.links.Link`'s.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from netrig import units
from netrig.link import spec as linkspec
from netrig.topo.problems import _check
from netrig.topo.protocols import area_id


def _checked(key: linkspec.Key) -> Any:
    """A pydantic validator reading a value as `key` says (the text is kept)."""
    return field_validator(key.name)(classmethod(lambda cls, v: _check(key.parse, v)))


def _model(name: str, keys: dict[str, linkspec.Key], base: type[BaseModel], types: dict[str, Any],
           doc: str) -> Any:
    """A pydantic model with one optional field per key of the link-spec schema."""
    fields = {k: (types.get(k, Any), None) for k in keys}
    checked = {f"_check_{k}": _checked(key) for k, key in keys.items() if k not in types}
    model = create_model(name, __base__=base, __validators__=checked, **fields)
    model.__doc__ = doc
    return model


class _AqmBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _belongs(self) -> Any:
        info = linkspec.DISCIPLINES[self.type]
        wrong = [k for k in self.model_fields_set if k != "type" and k not in info.params]
        if wrong:
            takes = ", ".join(info.params) or "no parameters"
            raise ValueError(f"{self.type} does not take {', '.join(sorted(wrong))} (it takes {takes})")
        for k in self.model_fields_set - {"type"}:  # by this discipline's own ranges
            try:
                _check(info.params[k].parse, getattr(self, k))
            except ValueError as e:
                raise ValueError(f"{k}: {e}") from None
        return self


# A parameter's field reads its value as some discipline's key of that name does; the
# discipline given reads it again by its own (`_belongs`).
_PARAMS = {k: key for info in reversed(linkspec.DISCIPLINES.values()) for k, key in info.params.items()}
_DISCIPLINE = Literal[tuple(linkspec.DISCIPLINES)]  # type: ignore[valid-type]
Aqm = _model("Aqm", _PARAMS, _AqmBase, {},
             "`aqm: {type: pie, target: 20ms}`; unset parameters take the discipline's defaults.")
Aqm = create_model("Aqm", __base__=Aqm, type=(_DISCIPLINE, ...))


class GeModel(BaseModel):
    """Gilbert-Elliott loss: p (good->bad), r (bad->good), loss in each state."""

    model_config = ConfigDict(extra="forbid")
    p: Any
    r: Any
    loss_good: Any = "0%"
    loss_bad: Any = "100%"

    @field_validator("p", "r", "loss_good", "loss_bad")
    @classmethod
    def _pct(cls, v: Any) -> Any:
        return _check(linkspec.KEYS["loss"].parse, v)


class _ShapingBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _consistent(self) -> Any:
        """The schema's rules between keys given together at one level (a rule that
        spans levels, or `requires`, is the resolved direction's: `Link.direction`)."""
        given = {k: getattr(self, k) for k in linkspec.KEYS if getattr(self, k, None) is not None}
        if not given:  # nothing set, nothing to break (most links of a big lab)
            return self
        try:
            d = linkspec.resolve({k: v.model_dump(exclude_none=True) if isinstance(v, BaseModel) else v
                                  for k, v in given.items()})
        except units.UnitError:
            return self  # a value's own error is its field's; a rule's is the direction's
        broken = linkspec.broken_rule(d, ("excludes",))
        if broken:
            raise ValueError(broken)
        return self

    def merged(self, over: Any) -> Any:
        """This shaping with `over`'s explicitly set fields on top (a key's whole value:
        `aqm: {type: pie}` over `aqm: {type: pie, target: 20ms}` drops the target)."""
        if over is None:
            return self
        data = self.model_dump(exclude_unset=True)
        data.update(over.model_dump(exclude_unset=True))
        return type(self).model_validate(data)

    def text(self) -> dict[str, Any]:
        """The keys given, as the user wrote them (aqm and gemodel as mappings)."""
        return {k: v for k, v in self.model_dump(exclude_none=True).items() if k in linkspec.KEYS}


_SHAPING_TYPES = {
    **{k: Literal[key.choices] | None for k, key in linkspec.KEYS.items() if key.kind == "choice"},  # type: ignore[misc]
    **{k: _DISCIPLINE | Aqm | None for k, key in linkspec.KEYS.items() if key.kind == "discipline"},
    **{k: GeModel | None for k, key in linkspec.KEYS.items() if key.kind == "gemodel"},
}
Shaping = _model("Shaping", linkspec.KEYS, _ShapingBase, _SHAPING_TYPES,
                 "What a link does to the traffic in one direction (or both): one optional "
                 "field per key of the link-spec schema.")


class LinkSpec(Shaping):  # type: ignore[misc, valid-type]
    """A link: its ends, optional name and addresses, shaping for both directions, and
    per-direction overrides."""

    a: str
    b: str
    name: str | None = None
    addr_a: str | None = None
    addr_b: str | None = None
    a_to_b: Shaping | None = None
    b_to_a: Shaping | None = None
    # Carried by netrig-link even while unshaped, so that it can be shaped live.
    emulated: bool | None = None
    # OSPF: the link's cost (both ends; else from its rate) and area (else the routers').
    cost: int | None = Field(None, ge=1, le=65535)
    area: int | str | None = None

    _area = field_validator("area")(classmethod(lambda cls, v: None if v is None else area_id(v)))

    @field_validator("addr_a", "addr_b")
    @classmethod
    def _addr(cls, v: Any) -> Any:
        if v is None:
            return None
        try:
            iface = ipaddress.ip_interface(v)
        except ValueError:
            raise ValueError(f"'{v}' is not an address with a prefix length (e.g. 10.0.0.1/24)") from None
        if iface.version != 4 or "/" not in str(v):
            raise ValueError(f"'{v}': give an IPv4 address with its prefix length (e.g. 10.0.0.1/24)")
        return v

    @property
    def label(self) -> str:
        return self.name or f"{self.a}-{self.b}"

    def shaping(self) -> Shaping:
        own = self.model_dump(exclude_unset=True, exclude={"a", "b", "name", "addr_a", "addr_b",
                                                          "a_to_b", "b_to_a", "emulated", "cost", "area"})
        return Shaping.model_validate(own)
