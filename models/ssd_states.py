"""An SSD's NVMe power states (its datasheet's power-state table, models.ssd.PowerState): which states exist, the cap
an operational state puts on the drive's power, the idle power in each, and the time a change of state takes."""

from __future__ import annotations

from iowatt.models.ssd import PowerState, SSDSpec


def power_state_entry(spec: SSDSpec, power_state: int | None) -> PowerState | None:
    """The table entry of a state (None without a table, where only PS0 exists); the range is checked."""
    index = 0 if power_state is None else power_state
    if not spec.power_states:
        if index != 0:
            raise ValueError(f"{spec.name} has no NVMe power-state table; only PS0 is valid, found PS{index}")
        return None
    if not 0 <= index < len(spec.power_states):
        raise ValueError(f"{spec.name} has power states PS0..PS{len(spec.power_states) - 1}, found PS{index}")
    return spec.power_states[index]


def power_cap_W(spec: SSDSpec, power_state: int | None) -> float | None:
    """An operational state's maximum power, or None when the drive has no power-state table."""
    entry = power_state_entry(spec, power_state)
    if entry is None:
        return None
    index = 0 if power_state is None else power_state
    if entry.non_operational:
        raise ValueError(
            f"{spec.name} PS{index} is non-operational (it serves no I/O): run in an operational state and let a "
            f"power_policy rest the drive in PS{index}"
        )
    if entry.max_W <= state_idle_W(spec, index):
        raise ValueError(f"{spec.name} PS{index} caps at {entry.max_W} W, at or below its idle power {state_idle_W(spec, index)} W")
    return entry.max_W


def state_idle_W(spec: SSDSpec, power_state: int) -> float:
    """Power with no command outstanding in a state: a non-operational state's own power (NVMe MP), an operational
    state's idle power (IDLP where reported, else the drive's idle_W: a lower cap does not lower idle power)."""
    entry = power_state_entry(spec, power_state)
    if entry is None:
        return spec.idle_W
    if entry.non_operational:
        return entry.max_W
    return spec.idle_W if entry.idle_W is None else entry.idle_W


def transition_seconds(spec: SSDSpec, from_state: int, to_state: int) -> float:
    """NVMe power-state change: exit latency of the old state + entry latency of the new one."""
    if from_state == to_state:
        return 0.0
    old, new = power_state_entry(spec, from_state), power_state_entry(spec, to_state)
    if old is None or new is None:
        return 0.0
    return (old.exit_latency_us + new.entry_latency_us) * 1e-6
