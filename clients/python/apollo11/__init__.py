"""A Python client and executor for the apollo11 job server (wire v1).

- :mod:`apollo11.codec`: frames and messages, with every check of the spec;
- :class:`Connection` / :class:`AsyncConnection`: raw framed connections;
- :class:`Client` / :class:`AsyncClient`: submit, wait, query, cancel, list,
  stats, state_get, pipelined over one connection;
- :class:`Executor` / :class:`AsyncExecutor`: run tasks by type;
- :mod:`apollo11.admin`: the v1.1 requests (requeue, by filter, pause and
  resume, shared-state repair, type_list), methods of both clients;
- :mod:`apollo11.cluster`: a cluster's status and membership changes;
  :mod:`apollo11.failover`: its addresses and the search for its leader.
"""

from .admin import Conflict, Matched, Requeued, StateChanged, TypeInfo, TypePage
from .client import AsyncClient, AsyncWatch, Client, Watch
from .cluster import ClusterMember, ClusterStatus
from .codec import DEFAULT_MAX_FRAME, FrameReader, Message, decode_frame, decode_payload, encode_frame, encode_payload
from .connection import AsyncConnection, Connection, Welcome, load_token, sign
from .errors import (
    Apollo11Error,
    AuthRequired,
    ClientClosed,
    ConnectionLost,
    EncodeError,
    FrameTooLargeError,
    LeaderOutside,
    MalformedError,
    NoLeader,
    OutcomeUnknown,
    ProtocolError,
    ReplyError,
    ServerError,
)
from .executor import AsyncExecutor, Executor
from .replies import Done, SharedState, Stats, Submitted, TaskPage, TaskState
from .task import Failure, Result, Task

__all__ = [
    "AsyncClient", "AsyncConnection", "AsyncExecutor", "AsyncWatch", "Apollo11Error", "AuthRequired",
    "Client", "ClientClosed", "ClusterMember", "ClusterStatus", "Conflict", "Connection", "ConnectionLost", "DEFAULT_MAX_FRAME", "Done", "EncodeError",
    "Executor", "Failure", "FrameReader", "FrameTooLargeError", "LeaderOutside", "MalformedError", "Matched",
    "Message", "NoLeader", "OutcomeUnknown", "ProtocolError",
    "ReplyError", "Requeued", "Result", "ServerError", "SharedState", "StateChanged", "Stats", "Submitted", "Task",
    "TaskPage", "TaskState", "TypeInfo", "TypePage",
    "Watch", "Welcome", "decode_frame", "decode_payload", "encode_frame", "encode_payload", "load_token", "sign",
]
__version__ = "0.1.0"
