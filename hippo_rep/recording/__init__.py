"""Record a trained model walking fresh environments into an xarray dataset (netCDF or zarr),
and open such recordings.

The dataset follows :mod:`hippo_rep.schema`. One concern per module:

- :mod:`~hippo_rep.recording.record`: running a model over walks. :func:`record_checkpoint`
  returns the recording in memory; :func:`record_to_file` writes ``.nc`` or streams
  ``.zarr``; :class:`Recorder` gives the pieces (one dataset per chunk of time) to write
  elsewhere.
- :mod:`~hippo_rep.recording.store`: writing files, atomically: :func:`write_netcdf`,
  :class:`ZarrWriter` and :func:`stream` (with the guarantee of what a killed write leaves),
  :func:`check_output`.
- :mod:`~hippo_rep.recording.read`: :func:`open_recording` opens either format lazily
  (dask-backed for zarr), validates it and trims it (:func:`trim`) to the steps it holds.

Reading a recording imports no torch (and, for netCDF, no zarr).
"""

from hippo_rep.datasets import RecordingError
from hippo_rep.recording.read import UNIT_CHUNKS, checked_recording, open_recording, trim
from hippo_rep.recording.record import (
    DEFAULT_CHUNK,
    DEFAULT_ENVS,
    Chunk,
    Recorder,
    RecordingConfig,
    record_checkpoint,
    record_to_file,
)
from hippo_rep.recording.store import (
    FORMATS,
    G_UNIT_CHUNK,
    MEMORY_CHUNK,
    NETCDF_TIME_CHUNK,
    ZSTD_LEVEL,
    ZarrWriter,
    check_output,
    stream,
    write_netcdf,
)

__all__ = ["DEFAULT_CHUNK", "DEFAULT_ENVS", "FORMATS", "G_UNIT_CHUNK", "MEMORY_CHUNK",
           "NETCDF_TIME_CHUNK", "UNIT_CHUNKS", "ZSTD_LEVEL", "Chunk", "Recorder",
           "RecordingConfig", "RecordingError", "ZarrWriter", "check_output", "checked_recording",
           "open_recording",
           "record_checkpoint", "record_to_file", "stream", "trim", "write_netcdf"]
