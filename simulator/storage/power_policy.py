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

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import simpy
from iowatt.models.provenance import Provenance
from iowatt.models.ssd import SSDSpec
from iowatt.models.ssd_states import power_state_entry, state_idle_W, transition_seconds
from iowatt.models.uncertainty import assumed_constant_of, constant
from pydantic import BaseModel, ConfigDict, Field, field_validator

if TYPE_CHECKING:
    from iowatt.simulator.flows import Constraint, FlowEngine, Meter

LINUX_APST_FACTOR = 50.0            # idle time = 50 x (ENLAT + EXLAT) (nvme_configure_apst)
LINUX_MAX_LATENCY_SECONDS = 0.1     # nvme_core.default_ps_max_latency_us = 100000
# link exit latency (s) and power saved per lane (W) by PCIe generation, in L1 and L1.2; idle time before L1
ASPM_EXIT_SECONDS = {"l1": 64e-6, "l1.2": 84e-6}
ASPM_ENTRY_IDLE_SECONDS = 32e-6
ASPM_SAVING_W_PER_LANE = {"l1": {3: 0.05, 4: 0.07, 5: 0.1}, "l1.2": {3: 0.07, 4: 0.1, 5: 0.14}}

PROVENANCE: dict[str, Provenance] = {
    "LINUX_APST_FACTOR": Provenance(
        p="datasheet", src="Linux drivers/nvme/host/core.c, nvme_configure_apst (transition_ms = (ENLAT + EXLAT in us) / 20)",
        note="the driver's APST table: each non-operational state is entered after 50 x its entry + exit latency of idle",
    ),
    "LINUX_MAX_LATENCY_SECONDS": Provenance(
        p="datasheet", src="Linux drivers/nvme/host/core.c, module parameter default_ps_max_latency_us = 100000",
        note="states whose exit latency exceeds it are left out of the APST table",
    ),
    "ASPM_EXIT_SECONDS": Provenance(
        p="datasheet",
        src="lspci -vv of a Samsung PM9A1/PM9A3/980 PRO: 'ASPM L1, Exit Latency L1 <64us' (public repository excerpt); "
        "an NVMe drive's L1 PM Substates capability: PortCommonModeRestoreTime=10us PortTPowerOnTime=10us (linux-pci list, 2025)",
        note="L1: the <64 us bound the drives report; L1.2: that plus common-mode restore and power-on time (10 + 10 us)",
    ),
    "ASPM_ENTRY_IDLE_SECONDS": Provenance(
        p="assumed",
        note="PCIe leaves the L1 entry idle time to the implementation; port logic enters L1 after some microseconds "
        "to tens of microseconds without traffic.  32 us: back-to-back requests never pay an L1 exit, a pause does",
        low=8e-6, high=128e-6, shape="log-uniform",
        range_note="the note's 'some microseconds to tens of microseconds': low 8 us, port logic that enters L1 as soon "
        "as its queues drain; high 128 us, a conservative idle timer",
    ),
    "ASPM_SAVING_W_PER_LANE": Provenance(
        p="assumed",
        note="no drive publishes its link power.  A PCIe lane's SerDes in L0 draws ~5 pJ/bit-class power, ~0.08 W per "
        "lane at 16 GT/s; L1 turns off the transmitters and receivers (most of it), L1.2 also the PLL and common-mode "
        "keepers (PCI-SIG L1 PM Substates ECN: near-off).  Scaled with the lane rate per generation",
        low=0.5, high=1.5,
        range_note="factors on every entry: low, half (SerDes of a newer process node at ~2.5 pJ/bit, or a link that "
        "keeps its PLL on in L1); high, 1.5 x (a lane at ~7.5 pJ/bit with all of it off in L1)",
    ),
}

ASPM_ENTRY_IDLE = assumed_constant_of("simulator.storage.power_policy.aspm_entry_idle_seconds", ASPM_ENTRY_IDLE_SECONDS,
                                      PROVENANCE["ASPM_ENTRY_IDLE_SECONDS"])
ASPM_SAVING_FACTOR = assumed_constant_of("simulator.storage.power_policy.aspm_saving_factor", 1.0, PROVENANCE["ASPM_SAVING_W_PER_LANE"])


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
    return constant(ASPM_SAVING_FACTOR.name) * per_lane.get(spec.link.generation, per_lane[max(per_lane)]) * spec.link.lanes


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


@dataclass(frozen=True)
class _Step:
    """A change the policy has planned while the drive is idle: from `at`, the clock shows `label`."""

    at: float
    label: str          # 'PS3', 'transition', or 'L1'/'L1.2' for the link
    state: int          # device state from then on (the target while in transition)
    device_W: float     # device power from then on (the old state's power while in transition)


class DrivePower:
    """One drive's power state at run time: the Watcher and Dynamics of its command counter (the gate).

    While the drive is idle the policy's steps (APST's idle timers, an entry, the link dropping to L1)
    are a plan, applied when the engine next looks at the gate (a command arrives, or the run settles):
    idle drives schedule no events, so a policy never keeps a finished run going.  A wake is an event
    (commands wait for it)."""

    def __init__(self, engine: FlowEngine, spec: SSDSpec, home: int, policy: PowerPolicy, gate: Constraint, meter: Meter) -> None:
        policy.check(spec, home)
        self.engine, self.spec, self.home, self.policy = engine, spec, home, policy
        self.gate, self.meter = gate, meter  # gate: capacity 0 while the drive cannot serve, inf when it can
        now = engine.env.now
        self.state, self.label, self.device_W = home, f"PS{home}", state_idle_W(spec, home)
        self.until = now                      # when the transition under way completes
        self.link_l1 = False
        self.rest_asked = False
        self.waking = False
        self.plan: list[_Step] = []
        self.clock = StateClock(self.label, now)
        self.link_clock = StateClock("L0", now)
        self.wakes = 0
        self.wake_seconds = 0.0
        self.chain = apst_chain(spec, policy) if policy.kind == "apst" else []
        gate.watcher = self
        gate.dynamics = self
        self.drained(engine, gate)  # the drive starts idle: APST and ASPM count from now

    # ---------------------------------------------------------------- Dynamics: apply the plan up to now
    def advance(self, elapsed_seconds: float, load: float) -> None:
        del elapsed_seconds, load
        self._apply_until(self.engine.env.now)

    def seconds_to_breakpoint(self, load: float) -> float:
        del load
        return float("inf")

    def on_breakpoint(self, engine: FlowEngine, constraint: Constraint) -> None:
        del engine, constraint

    def _apply_until(self, now: float) -> None:
        while self.plan and self.plan[0].at <= now:
            step = self.plan.pop(0)
            if step.label.startswith("L1"):
                self.link_l1 = True
                self.link_clock.move(step.label, step.at)
            else:
                self.state, self.label, self.device_W = step.state, step.label, step.device_W
                self.until = step.at
                self.clock.move(step.label, step.at)
            self.engine.set_meter_idle(self.meter, self._idle_W(), at=step.at)

    def _idle_W(self) -> float:
        """Power with nothing to do: a resting link saves its lanes' power in an operational state (a non-operational
        state's power is the whole drive's, link included; in transit the old state's power is drawn)."""
        entry = power_state_entry(self.spec, self.state)
        operational = self.label != "transition" and not (entry is not None and entry.non_operational)
        saving = aspm_saving_W(self.spec, self.policy.aspm) if self.link_l1 and operational else 0.0
        return self.device_W - saving

    # ---------------------------------------------------------------- Watcher: work arrives, work is gone
    def flow_arrives(self, engine: FlowEngine, constraint: Constraint) -> None:
        del constraint
        engine.sync(self.gate)  # apply what the plan did while the drive was idle
        self.plan.clear()
        self.rest_asked = False
        if self.waking:
            return  # a command already woke the drive: this one waits with it
        now = engine.env.now
        delay = max(0.0, self.until - now)  # a transition under way completes first
        if self.state != self.home:
            delay += transition_seconds(self.spec, self.state, self.home)
        if self.link_l1:
            delay += ASPM_EXIT_SECONDS[self.policy.aspm]
            self.link_l1 = False
            self.link_clock.move("L0", now)
        if delay <= 0.0:
            self.engine.set_meter_idle(self.meter, self._idle_W())
            return
        self.wakes += 1
        self.wake_seconds += delay
        self.waking = True
        engine.set_capacity(self.gate, 0.0)
        self.state, self.label, self.device_W, self.until = self.home, "transition", state_idle_W(self.spec, self.home), now + delay
        self.clock.move("transition", now)
        engine.set_meter_idle(self.meter, self._idle_W())
        engine.env.process(self._wake(delay))

    def _wake(self, delay: float) -> Generator[simpy.Event, object, None]:
        yield self.engine.env.timeout(delay)
        self.waking = False
        self.label = f"PS{self.home}"
        self.clock.move(self.label, self.engine.env.now)
        self.engine.set_meter_idle(self.meter, self._idle_W())
        self.engine.set_capacity(self.gate, float("inf"))

    def drained(self, engine: FlowEngine, constraint: Constraint) -> None:
        del constraint
        engine.sync(self.gate)
        now = engine.env.now
        self.plan = []
        if self.policy.aspm != "off":
            self.plan.append(_Step(now + constant(ASPM_ENTRY_IDLE.name), self.policy.aspm.upper(), self.state, self.device_W))
        if self.policy.kind == "apst":
            self._plan_chain(now)
        elif self.policy.kind == "between_phases" and self.rest_asked:
            self._plan_move(now, self.policy.rest_state or 0)
        self.plan.sort(key=lambda step: step.at)

    def _plan_chain(self, now: float) -> None:
        """APST: each usable non-operational state after its idle time in the state before it."""
        t, previous = now, self.state
        for state, idle in self.chain:
            self._plan_move(t + idle, state, previous)
            t = self.plan[-1].at
            previous = state

    def _plan_move(self, start: float, state: int, previous: int | None = None) -> None:
        """Move to `state` from `start`: in transit for the old state's exit + the new one's entry latency, at the
        old state's power."""
        old = self.state if previous is None else previous
        if state == old:
            return
        self.plan.append(_Step(start, "transition", state, state_idle_W(self.spec, old)))
        self.plan.append(_Step(start + transition_seconds(self.spec, old, state), f"PS{state}", state, state_idle_W(self.spec, state)))

    # ---------------------------------------------------------------- the workload's calls
    def rest(self) -> None:
        """A phase ended: the between_phases policy rests the drive once it is idle."""
        if self.policy.kind != "between_phases":
            return
        self.rest_asked = True
        if not self.gate.flows:
            self.drained(self.engine, self.gate)

    def change_home(self, new_state: int) -> Generator[simpy.Event, object, float]:
        """SimPy process body: move the drive's operational state; it serves nothing for the transition."""
        latency = transition_seconds(self.spec, self.home, new_state)
        if latency > 0.0:
            self.engine.set_capacity(self.gate, 0.0)
            self.clock.move("transition", self.engine.env.now)
            yield self.engine.env.timeout(latency)
            self.engine.set_capacity(self.gate, float("inf"))
        self.home = self.state = new_state
        self.label, self.device_W = f"PS{new_state}", state_idle_W(self.spec, new_state)
        self.clock.move(self.label, self.engine.env.now)
        self.engine.set_meter_idle(self.meter, self._idle_W())
        return latency

    # ---------------------------------------------------------------- results
    def report(self) -> dict[str, object]:
        self.engine.sync(self.gate)
        now = self.engine.env.now
        out: dict[str, object] = {
            "power_state_seconds": self.clock.totals(now),
            "wake_count": float(self.wakes),
            "wake_latency_seconds_total": self.wake_seconds,
        }
        if self.policy.aspm != "off":
            out["link_state_seconds"] = self.link_clock.totals(now)
        return out
