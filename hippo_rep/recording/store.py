"""Writing recordings: netCDF atomically, zarr streamed chunk by chunk of time.

:func:`write_netcdf` writes a dataset to a temporary file and renames it: an interrupted
write leaves no file and never a damaged one. :class:`ZarrWriter` streams a recording into a
zarr store one chunk of time at a time (:func:`stream` overlaps the writing with the model's
next chunk), so the walk's activity never needs to fit in memory. :func:`check_output` checks
an output path before any work.

**The zarr guarantee.** A zarr recording is created in a hidden temporary folder beside the
output and renamed onto it once its first chunk is complete; each later chunk is appended
(the arrays are resized and new chunk files written; of the old ones only the small
per-memory coordinates are rewritten, each file atomically), then the consolidated
metadata and the ``n_steps`` attr are rewritten, each as one atomic file replacement. Readers
go through the consolidated metadata, so at every instant the store holds a valid recording
whose first ``n_steps`` steps are final (memories written after them are marked unused by
:func:`~hippo_rep.recording.read.open_recording`): a run killed at any point leaves either no
output (killed during the first chunk: at most a hidden ``.NAME.*.partial`` folder) or a
valid, shorter recording whose ``n_steps`` attr says how many steps it holds (the
``recording_config`` attr keeps the number asked for).
:func:`~hippo_rep.recording.read.open_recording` trims a store caught between a chunk's
metadata and its ``n_steps`` update to ``n_steps``.

With ``overwrite``, an existing output is kept until the new recording is complete: the
new store is streamed into the hidden ``.NAME.*.partial`` folder and swapped in at the end
(the old one is set aside as ``.NAME.*.old`` for the instant of the swap), so a killed
overwrite leaves the old recording. Temporary siblings left by killed writes are removed (an
``.old`` one put back when the output is missing) the next time that output is written.

Every chunk of every array is written, even one that holds only the fill value, and the
store says so (attr :data:`~hippo_rep.datasets.CHUNKS_COMPLETE_ATTR`);
:func:`~hippo_rep.recording.read.open_recording` then refuses a store with a missing or empty
chunk file, naming the variable, instead of reading zeros.

Zarr stores are written in zarr format 3 (zarr-python ≥ 3), chunked along ``time`` by the
recording chunk and along ``g_unit`` / ``memory`` in blocks of :data:`G_UNIT_CHUNK` /
:data:`MEMORY_CHUNK` units. Needs no torch, so analysis code can save a (sub)recording too.
"""

from __future__ import annotations

import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import xarray as xr

# zarr is imported where used: netCDF files need no zarr.
from hippo_rep import schema as S
from hippo_rep.datasets import CHUNKS_COMPLETE_ATTR, RecordingError, is_zarr_store
from hippo_rep.defaults import NETCDF_COMPLEVEL
from hippo_rep.defaults import RECORD_CHUNK as DEFAULT_CHUNK
from hippo_rep.fileio import atomic_write, clean_stale, remove_path, swap_in

#: Positional-encoding units per zarr chunk / per dask chunk of an opened recording.
G_UNIT_CHUNK = 8
#: Memory neurons per zarr chunk / per dask chunk of an opened recording.
MEMORY_CHUNK = 32
#: Output suffixes and their formats.
FORMATS = {".nc": "netcdf", ".zarr": "zarr"}
#: zstd level of zarr activity variables (1: as small as the default level, faster).
ZSTD_LEVEL = 1
#: netCDF chunk length along time (activity variables; chunked by unit like zarr).
NETCDF_TIME_CHUNK = 4096

# Zarr warns at every consolidation of a format-3 store that consolidated metadata is not yet
# in the v3 spec; the writer consolidates after every chunk, in a background thread where
# ``warnings.catch_warnings`` is not safe, so this one message is filtered for good.
warnings.filterwarnings("ignore", message="Consolidated metadata is currently not part")


def positive_int(name: str, value) -> int:
    """``value`` as an int, or a RecordingError naming ``name`` unless it is a positive
    integer."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RecordingError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def check_output(out, overwrite: bool = False) -> str:
    """Check an output path before any work; returns its format (``netcdf`` or ``zarr``).

    Raises
    ------
    RecordingError
        Not ``.nc`` / ``.zarr``, or (with ``overwrite``) an existing path of the wrong kind:
        a folder that is not a zarr store is never removed.
    FileExistsError
        ``out`` exists and ``overwrite`` is False.
    """
    out = Path(out)
    fmt = FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise RecordingError(f"output {str(out)!r} must end in .nc (netCDF) or .zarr (zarr)")
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise FileExistsError(f"output {str(out)!r} exists; pass --overwrite (overwrite="
                                  "True) to replace it, or choose another path")
        if out.is_dir() and not is_zarr_store(out):
            raise RecordingError(f"output {str(out)!r} is a folder that is not a zarr store; "
                                 "refusing to replace it")
        if fmt == "netcdf" and out.is_dir():
            raise RecordingError(f"output {str(out)!r} is a folder; refusing to replace it "
                                 "with a netCDF file")
    return fmt


def stream(pieces, writer: ZarrWriter) -> None:
    """Append ``pieces`` to ``writer`` in a background thread, one behind the producer.

    Writing chunk k (compression, files) overlaps computing chunk k + 1, and at most two
    pieces are alive at once. Appends stay sequential and in order; if the producer fails
    (or is interrupted), the append in flight is finished before the error propagates, so
    the store then holds every chunk produced before the failure. A writer error stops the
    producer at its next chunk and is raised.
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hippo_rep-zarr") as pool:
        pending = None
        for piece in pieces:
            if pending is not None:
                pending.result()
            pending = pool.submit(writer.append, piece)
        if pending is not None:
            pending.result()


def write_netcdf(ds: xr.Dataset, out, overwrite: bool = False) -> Path:
    """Write a recording to netCDF atomically (temporary file, then rename); needs no torch,
    so analysis code can save a (sub)recording with it too."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"output {str(out)!r} exists; pass overwrite=True to replace it")
    engine = _netcdf_engine()
    encoding = {}
    for name in ds.variables:
        enc = {}
        if ds[name].dtype.kind == "f":
            enc["_FillValue"] = None
        if name in S.DATA_VARS:
            enc.update(zlib=True, complevel=NETCDF_COMPLEVEL,
                       chunksizes=_chunk_shape(ds, name, NETCDF_TIME_CHUNK, True))
        if enc:
            encoding[name] = enc
    if engine == "h5netcdf":  # h5netcdf spells compression differently
        for enc in encoding.values():
            if enc.pop("zlib", False):
                enc["compression"] = "gzip"
                enc["compression_opts"] = enc.pop("complevel")
    atomic_write(out, lambda tmp: ds.to_netcdf(tmp, engine=engine, encoding=encoding))
    return out


def _netcdf_engine() -> str:
    try:
        import netCDF4  # noqa: F401

        return "netcdf4"
    except ImportError:
        return "h5netcdf"


def _chunk_shape(ds: xr.Dataset, name: str, time_chunk: int, clip: bool) -> tuple[int, ...]:
    """On-disk chunks: whole ``env`` / ``world_node``, ``time_chunk`` steps, unit blocks."""
    block = {S.TIME: time_chunk, S.G_UNIT: G_UNIT_CHUNK, S.MEMORY: MEMORY_CHUNK,
             S.P_UNIT: MEMORY_CHUNK}
    shape = []
    for dim in ds[name].dims:
        n = ds.sizes[dim]
        c = block.get(dim, n)
        shape.append(max(1, min(c, n)) if clip or dim not in (S.TIME, S.MEMORY) else c)
    return tuple(shape)


class ZarrWriter:
    """Stream a recording into a zarr store, one chunk of time (one dataset piece) at a time.

    The first :meth:`append` writes the store into a hidden temporary folder beside ``path``
    and renames it onto ``path`` (replacing an existing store only with ``overwrite``); later
    appends grow it. Pieces must be consecutive in time and, except the last, hold ``chunk``
    steps each (they do when they come from :meth:`Recorder.pieces`). See the module
    docstring for what a killed run leaves.
    """

    def __init__(self, path, chunk: int = DEFAULT_CHUNK, overwrite: bool = False):
        import zarr

        if int(zarr.__version__.split(".")[0]) < 3:
            raise RecordingError(f"streaming to zarr needs zarr-python ≥ 3 (found "
                                 f"{zarr.__version__}); write .nc instead or upgrade zarr")
        self.path = Path(path)
        self.chunk = positive_int("chunk", chunk)
        self.overwrite = overwrite
        self.n_steps = 0
        self.created = False
        clean_stale(self.path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"output {str(self.path)!r} exists; pass --overwrite "
                                  "(overwrite=True) to replace it")
        # Replacing an output: stream into the temporary store, swap in :meth:`finish`.
        self.deferred = self.path.exists() or self.path.is_symlink()
        self.target = self.path  # where appends go (the temporary store while deferred)

    def append(self, piece: xr.Dataset) -> None:
        start = int(piece[S.TIME].values[0])
        if start != self.n_steps:
            raise RecordingError(f"{str(self.path)!r}: piece starts at step {start}, "
                                 f"expected {self.n_steps}")
        if self.n_steps % self.chunk:
            raise RecordingError(f"{str(self.path)!r}: cannot append after a short chunk "
                                 f"(holds {self.n_steps} steps, chunk {self.chunk})")
        import zarr

        with zarr.config.set({"array.write_empty_chunks": True}):
            if not self.created:
                self._create(piece)
            else:
                stop = self._write(piece)
                self._consolidate()
                self._set_n_steps(stop)
        self.n_steps = int(piece.attrs[S.N_STEPS])

    def finish(self) -> None:
        """Swap a complete replacement store onto the output (a no-op for a new output,
        which is in place since the first chunk)."""
        if not self.deferred or not self.created:
            return
        self._swap(self.target)
        self.deferred, self.target = False, self.path

    def abandon(self) -> None:
        """Drop an unfinished replacement store (the old output stays as it was)."""
        if self.deferred and self.created:
            remove_path(self.target)
            self.created = False

    def _swap(self, tmp: Path) -> None:
        """Put the complete store ``tmp`` at the output, setting an old one aside first."""
        if (self.path.exists() or self.path.is_symlink()) and not self.overwrite:
            remove_path(tmp)
            raise FileExistsError(f"output {str(self.path)!r} appeared while recording; not "
                                  "replacing it")
        swap_in(tmp, self.path)

    def _create(self, piece: xr.Dataset) -> None:
        from zarr.codecs import ZstdCodec

        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.path.parent, prefix=f".{self.path.name}.",
                                    suffix=".partial"))
        piece = piece.assign_attrs({CHUNKS_COMPLETE_ATTR: 1})
        try:
            encoding = {}
            for name in piece.variables:
                enc = {"chunks": _chunk_shape(piece, name, self.chunk, False)}
                if piece[name].dtype.kind == "f":
                    # zeros, not NaN, where memory_activity grows: a memory that did not
                    # exist yet has activity 0 (and no value is masked on reading).
                    enc.update(_FillValue=None, fill_value=0.0)
                if name in S.DATA_VARS:
                    enc["compressors"] = (ZstdCodec(level=ZSTD_LEVEL),)
                encoding[name] = enc
            piece.to_zarr(tmp, mode="w", zarr_format=3, consolidated=True, encoding=encoding,
                          write_empty_chunks=True)
        except BaseException:
            remove_path(tmp)
            raise
        if self.deferred:
            self.target = tmp
        else:
            self._swap(tmp)
        self.created = True

    def _write(self, piece: xr.Dataset) -> int:
        """Grow the arrays and write the piece; visible to readers only after the commit."""
        import zarr

        stop = int(piece.attrs[S.N_STEPS])
        n_memory = piece.sizes.get(S.MEMORY, 0)
        group = zarr.open_group(self.target, mode="r+", use_consolidated=False)
        for name, var in piece.variables.items():
            dims = var.dims
            if S.TIME not in dims and S.MEMORY not in dims:
                continue  # static: env, g_unit, world_node, node_x, node_y
            arr = group[name]
            shape = list(arr.shape)
            region = []
            for i, dim in enumerate(dims):
                if dim == S.TIME:
                    if shape[i] != self.n_steps:
                        raise RecordingError(f"{str(self.path)!r}: {name} holds {shape[i]} "
                                             f"steps, expected {self.n_steps}")
                    shape[i] = stop
                    region.append(slice(self.n_steps, stop))
                else:
                    if dim == S.MEMORY:
                        if n_memory < shape[i]:
                            raise RecordingError(f"{str(self.path)!r}: memories cannot "
                                                 "disappear")
                        shape[i] = n_memory
                    region.append(slice(None))
            if tuple(shape) != tuple(arr.shape):
                old = tuple(arr.shape)
                arr.resize(tuple(shape))
                self._fill_new_blocks(arr, dims, old)
            arr[tuple(region)] = np.asarray(var.values, dtype=arr.dtype)
        return stop

    def _fill_new_blocks(self, arr, dims, old: tuple) -> None:
        """Write the fill value into the chunks that growing ``memory`` added over the steps
        already stored (so every chunk exists; see the module docstring)."""
        if S.TIME not in dims or S.MEMORY not in dims:
            return
        t, m = dims.index(S.TIME), dims.index(S.MEMORY)
        block = arr.chunks[m]
        first = -(-old[m] // block) * block  # memory slots from here have no chunk yet
        if first >= arr.shape[m] or self.n_steps == 0:
            return
        for start in range(0, self.n_steps, arr.chunks[t]):
            region = [slice(None)] * len(dims)
            region[t] = slice(start, min(start + arr.chunks[t], self.n_steps))
            region[m] = slice(first, arr.shape[m])
            shape = [len(range(*r.indices(n))) for r, n in zip(region, arr.shape, strict=True)]
            arr[tuple(region)] = np.full(shape, arr.fill_value, dtype=arr.dtype)

    def _consolidate(self) -> None:
        import zarr

        zarr.consolidate_metadata(str(self.target))

    def _set_n_steps(self, stop: int) -> None:
        import zarr

        group = zarr.open_group(self.target, mode="r+", use_consolidated=True)
        group.attrs[S.N_STEPS] = int(stop)  # rewrites the root metadata in one file
        if group.metadata.consolidated_metadata is None:  # pragma: no cover (zarr change)
            zarr.consolidate_metadata(str(self.target))
