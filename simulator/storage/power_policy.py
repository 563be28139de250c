"""How a drive moves between NVMe power states and PCIe link states while it runs.

Policies (a scenario's `system.storage.power_policy`):
  fixed           the drive stays in its operational state (`power_state`); its idle power is
                  drawn between bursts (the behaviour of every earlier release).
  apst            NVMe Autonomous Power State Transition: after `idle_seconds[k]` without a command
                  the drive enters the k-th usable non-operational state (shallowest first).  The
                  defaults are the Linux nvme driver's rule for each state: idle time = 50 x (ENLAT +
                  EXLAT), states whose exit latency exceeds `max_latency_seconds` (the driver's
                  default_ps_max_latency_us, 100 ms) left out; each state targets the next deeper
                  one (drivers/nvme/host/core.c, nvme_configure_apst).
  between_phases  the workload says a phase ended (a checkpoint saved, an epoch done): once the
                  drive is idle it moves to `rest_state` at once ("drop to PSn between checkpoints").
Every policy: the first command after a rest waits for the rest of the entry, then the state's exit
latency (NVMe EXLAT) and the operational state's entry latency, while the drive serves nothing; it
draws its operational idle power meanwhile (NVMe states the latencies, not the power in transit).
In a non-operational state it draws that state's power (NVMe MP of a NOPS entry).

PCIe ASPM (`aspm: l1` or `l1.2`, where the drive supports it): an idle link drops to L1 (L1.2)
at once and the drive saves the link's lanes' power; the first command pays the link's exit
latency.  Figures: ASPM_EXIT_SECONDS and ASPM_SAVING_W_PER_LANE below.

The runtime is a Watcher on the drive's command counter (simulator.flow_network): the engine tells
it when work arrives and when the last command finished.  It keeps the time spent in each state.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import simpy
from iowatt.models.provenance import Provenance
from iowatt.models.ssd import SSDSpec, power_state_entry, state_idle_W
from pydantic import BaseModel, ConfigDict, Field, field_validator

if TYPE_CHECKING:
    from iowatt.simulator.flows import Constraint, FlowEngine, Meter

LINUX_APST_FACTOR = 50.0            # idle time = 50 x (ENLAT + EXLAT) (nvme_configure_apst)
LINUX_MAX_LATENCY_SECONDS = 0.1     # nvme_core.default_ps_max_latency_us = 100000
# link exit latency (s) and power saved per lane (W) by PCIe generation, in L1 and L1.2
ASPM_EXIT_SECONDS = {"l1": 64e-6, "l1.2": 84e-6}
ASPM_SAVING_W_PER_LANE = {"l1": {3: 0.05, 4: 0.07, 5: 0.1}, "l1.2": {3: 0.07, 4: 0.1, 5: 0.14}}

PROVENANCE: dict[str, Provenance] = {
    "ASPM_EXIT_SECONDS": Provenance(
        p="datasheet",
        src="lspci -vv of a Samsung PM9A1/PM9A3/980 PRO: 'ASPM L1, Exit Latency L1 <64us' (public repository excerpt); "
        "an NVMe drive's L1 PM Substates capability: PortCommonModeRestoreTime=10us PortTPowerOnTime=10us (linux-pci list, 2025)",
        note="L1: the <64 us bound the drives report; L1.2: that plus common-mode restore and power-on time (10 + 10 us)",
    ),
    "ASPM_SAVING_W_PER_LANE": Provenance(
        p="assumed",
        note="no drive publishes its link power.  A PCIe lane's SerDes in L0 draws ~5 pJ/bit-class power, ~0.08 W per "
        "lane at 16 GT/s; L1 turns off the transmitters and receivers (most of it), L1.2 also the PLL and common-mode "
        "keepers (PCI-SIG L1 PM Substates ECN: near-off).  Scaled with the lane rate per generation",
    ),
}


class PowerPolicy(BaseModel):
    """`system.storage.power_policy`: how the drives rest between bursts (module docstring)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["fixed", "apst", "between_phases"] = "fixed"
    rest_state: int | None = Field(default=None, description="between_phases: the state to rest in, 'PS0'..'PS31'")
    idle_seconds: list[float] | None = Field(
        default=None, description="apst: idle time before each usable non-operational state, shallowest first "
        "(default: the Linux rule, 50 x (ENLAT + EXLAT))",
    )
    max_latency_seconds: float = Field(default=LINUX_MAX_LATENCY_SECONDS, gt=0, description="apst: largest exit latency a state may have")
    aspm: Literal["off", "l1", "l1.2"] = Field(default="off", description="PCIe link power state of an idle link")

    @field_validator("rest_state", mode="before")
    @classmethod
    def _state(cls, value: object) -> object:
        from iowatt.simulator.machine import parse_power_state

        return None if value is None else parse_power_state(value)

    @field_validator("idle_seconds")
    @classmethod
    def _positive(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and any(not v >= 0.0 for v in value):
            raise ValueError(f"idle_seconds: expected times >= 0, found {value}")
        return value

    def check(self, spec: SSDSpec, home: int) -> None:
        """Refuse a policy the drive cannot follow (raises ValueError naming the field)."""
        if self.kind == "between_phases":
            if self.rest_state is None:
                raise ValueError("power_policy.rest_state: expected the state to rest in (e.g. 'PS4') for kind between_phases, found none")
            power_state_entry(spec, self.rest_state)
        if self.kind == "apst":
            chain = apst_chain(spec, self)
            if not chain:
                raise ValueError(f"power_policy.kind: apst needs a non-operational state in {spec.name}'s table, found none usable")
        if self.aspm != "off":
            if self.aspm not in spec.aspm_support:
                found = ", ".join(spec.aspm_support) or "none"
                raise ValueError(f"power_policy.aspm: {spec.name} supports ASPM {found}, found {self.aspm!r}")
            if spec.link.kind != "pcie":
                raise ValueError(f"power_policy.aspm: ASPM is a PCIe link state; {spec.name} is {spec.link.kind}")
        del home


def apst_chain(spec: SSDSpec, policy: PowerPolicy) -> list[tuple[int, float]]:
    """(state, idle seconds before entering it) for each usable non-operational state, shallowest first."""
    usable = [i for i, s in enumerate(spec.power_states) if s.non_operational and s.exit_latency_us * 1e-6 <= policy.max_latency_seconds]
    if policy.idle_seconds is not None:
        if len(policy.idle_seconds) != len(usable):
            raise ValueError(f"power_policy.idle_seconds: expected {len(usable)} times (one per usable non-operational state "
                             f"of {spec.name}), found {len(policy.idle_seconds)}")
        return list(zip(usable, policy.idle_seconds, strict=True))
    states = spec.power_states
    return [(i, LINUX_APST_FACTOR * (states[i].entry_latency_us + states[i].exit_latency_us) * 1e-6) for i in usable]


def aspm_saving_W(spec: SSDSpec, aspm: str) -> float:
    if aspm == "off" or spec.link.generation is None:
        return 0.0
    per_lane = ASPM_SAVING_W_PER_LANE[aspm]
    return per_lane.get(spec.link.generation, per_lane[max(per_lane)]) * spec.link.lanes


@dataclass
class StateClock:
    """Seconds spent in each state label, from the transitions (state labels: 'PS0', 'PS4', 'transition')."""

    label: str
    since: float
    seconds: dict[str, float] = field(default_factory=dict)

    def move(self, label: str, now: float) -> None:
        self.seconds[self.label] = self.seconds.get(self.label, 0.0) + now - self.since
        self.label, self.since = label, now

    def totals(self, now: float) -> dict[str, float]:
        out = dict(self.seconds)
        out[self.label] = out.get(self.label, 0.0) + now - self.since
        return out


class DrivePower:
    """One drive's power state at run time (the Watcher of its command counter)."""

    def __init__(self, engine: FlowEngine, spec: SSDSpec, home: int, policy: PowerPolicy, gate: Constraint, meter: Meter) -> None:
        policy.check(spec, home)
        self.engine, self.spec, self.home, self.policy = engine, spec, home, policy
        self.gate, self.meter = gate, meter  # gate: capacity 0 while the drive cannot serve, inf when it can
        self.state = home
        self.settled_at = engine.env.now     # when the current state (or transition) is complete
        self.link_l1 = False
        self.rest_asked = False
        self.token = 0                        # retires timers scheduled before a change
        self.clock = StateClock(f"PS{home}", engine.env.now)
        self.link_clock = StateClock("L0", engine.env.now)
        self.wakes = 0
        self.wake_seconds = 0.0
        self.waking = False
        self.chain = apst_chain(spec, policy) if policy.kind == "apst" else []
        gate.watcher = self

    # ---------------------------------------------------------------- the engine's calls
    def flow_arrives(self, engine: FlowEngine, constraint: Constraint) -> None:
        del engine, constraint
        self.token += 1
        if self.waking:
            return  # a command already woke the drive: this one waits with it
        now = self.engine.env.now
        delay = max(0.0, self.settled_at - now)  # an entry under way completes first
        if self.state != self.home:
            delay += self._transition(self.state, self.home)
        if self.link_l1:
            delay += ASPM_EXIT_SECONDS[self.policy.aspm]
            self._link(False)
        self.rest_asked = False
        if delay <= 0.0:
            return
        self.wakes += 1
        self.wake_seconds += delay
        self.waking = True
        self.engine.set_capacity(self.gate, 0.0)
        self.engine.set_meter_idle(self.meter, state_idle_W(self.spec, self.home))
        self.clock.move("transition", now)
        self.state, self.settled_at = self.home, now + delay
        self._after(delay, self._awake)

    def drained(self, engine: FlowEngine, constraint: Constraint) -> None:
        del engine, constraint
        self.token += 1
        if self.policy.aspm != "off":
            self._link(True)
        if self.policy.kind == "apst" and self.chain:
            state, idle = self.chain[0]
            self._after(idle, lambda: self._enter(state, 1))
        elif self.policy.kind == "between_phases" and self.rest_asked:
            self._enter(self.policy.rest_state or 0, None)

    # ---------------------------------------------------------------- the workload's call
    def rest(self) -> None:
        """A phase ended: the between_phases policy rests the drive once it is idle."""
        if self.policy.kind != "between_phases":
            return
        self.rest_asked = True
        if not self.gate.flows:
            self.token += 1
            self._enter(self.policy.rest_state or 0, None)

    # ---------------------------------------------------------------- transitions
    def _transition(self, old: int, new: int) -> float:
        from iowatt.models.ssd import transition_seconds

        return transition_seconds(self.spec, old, new)

    def _after(self, seconds: float, action: Callable[[], None]) -> None:
        """Run `action` after `seconds` unless something happened meanwhile (a command, a drain)."""
        token = self.token
        env = self.engine.env

        def run() -> Generator[simpy.Event, object, None]:
            yield env.timeout(seconds)
            if token == self.token:
                action()

        env.process(run())

    def _enter(self, state: int, next_index: int | None) -> None:
        """Begin the move to `state` now; it completes after the transition latency (old EXLAT + new ENLAT)."""
        if state == self.state:
            return
        now = self.engine.env.now
        latency = self._transition(self.state, state)
        self.clock.move("transition", now)
        self.engine.set_meter_idle(self.meter, state_idle_W(self.spec, self.state))  # the old state's power in transit
        self.state, self.settled_at = state, now + latency
        self._after(latency, lambda: self._arrived(state, next_index))

    def _arrived(self, state: int, next_index: int | None) -> None:
        now = self.engine.env.now
        self.clock.move(f"PS{state}", now)
        self.engine.set_meter_idle(self.meter, self._idle_W(state))
        if next_index is not None and next_index < len(self.chain):
            deeper, idle = self.chain[next_index]
            self._after(idle, lambda: self._enter(deeper, next_index + 1))

    def _awake(self) -> None:
        now = self.engine.env.now
        self.waking = False
        self.clock.move(f"PS{self.home}", now)
        self.engine.set_capacity(self.gate, float("inf"))

    def _link(self, low: bool) -> None:
        now = self.engine.env.now
        self.link_l1 = low
        self.link_clock.move(self.policy.aspm.upper() if low else "L0", now)
        if now >= self.settled_at:
            self.engine.set_meter_idle(self.meter, self._idle_W(self.state))

    def _idle_W(self, state: int) -> float:
        """Power with nothing to do in `state`: a resting link saves its lanes' power in an operational state (a
        non-operational state's power is the whole drive's, link included)."""
        entry = power_state_entry(self.spec, state)
        saving = aspm_saving_W(self.spec, self.policy.aspm) if self.link_l1 and not (entry and entry.non_operational) else 0.0
        return state_idle_W(self.spec, state) - saving

    def change_home(self, new_state: int) -> Generator[simpy.Event, object, float]:
        """SimPy process body: move the drive's operational state; it serves nothing for the transition."""
        latency = self._transition(self.home, new_state)
        if latency > 0.0:
            self.engine.set_capacity(self.gate, 0.0)
            self.clock.move("transition", self.engine.env.now)
            yield self.engine.env.timeout(latency)
            self.engine.set_capacity(self.gate, float("inf"))
        self.home = self.state = new_state
        self.clock.move(f"PS{new_state}", self.engine.env.now)
        self.engine.set_meter_idle(self.meter, self._idle_W(new_state))
        return latency

    # ---------------------------------------------------------------- results
    def report(self) -> dict[str, object]:
        now = self.engine.env.now
        out: dict[str, object] = {
            "power_state_seconds": self.clock.totals(now),
            "wake_count": float(self.wakes),
            "wake_latency_seconds_total": self.wake_seconds,
        }
        if self.policy.aspm != "off":
            out["link_state_seconds"] = self.link_clock.totals(now)
        return out
