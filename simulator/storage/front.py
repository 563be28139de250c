"""A volume in front of another (an NFS export, a host interface): the drives, the capacity, discards and
layout are the inner volume's; the front adds its own constraints and its own closed loop."""

from __future__ import annotations

from iowatt.simulator.storage.contract import Drive, Volume


class FrontVolume(Volume):
    inner: Volume

    @property
    def drives(self) -> list[Drive]:
        return self.inner.drives

    @property
    def unique_drives(self) -> list[Drive]:
        return self.inner.unique_drives

    @property
    def capacity_bytes(self) -> float:
        return self.inner.capacity_bytes

    def discard(self, nbytes: float) -> None:
        self.inner.discard(nbytes)

    def occupy(self, share_of_capacity: float) -> None:
        self.inner.occupy(share_of_capacity)
