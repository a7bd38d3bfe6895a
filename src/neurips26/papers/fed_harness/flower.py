"""The Flower engine of the harness: a `ServerApp` whose strategy wraps a harness aggregator and
a `ClientApp` whose train handler is one client's local round, for federations across machines.

The same code paths as the in-process engine (`simulation`):
- server: `HarnessStrategy` (a `flwr.serverapp.strategy.FedAvg`) keeps one copy of every
  client's LoRA adapter and head on the frozen base (`simulation.build_clients`, same seed, so
  round 0 dispatches the same B = 0 and shared A) and an `Engine` over them; a round's replies
  are copied into those copies and `Engine.server_round` runs unchanged: the aggregator from
  `aggregators.make(name, **settings)` per LoRA module with the same per-module `state` (seeded
  generator, round, layer), the `Dispatch` applied with its shape checks, `base_delta` added once
  to the shared frozen weights, the heads averaged with the data weights, the conflict records.
- client: `simulation.local_round`, the in-process training step's loss (`client_loss` +
  `drift_penalty`), minibatches from Generator([seed, step, client]), a fresh AdamW per round.

Each client gets its own part of the dispatch (client i: its B_i, A_i per module, its head, the
frozen weights of the modules a `base_delta` changed, the layer's `reference_basis` when the
aggregator keeps one). The server learns which node holds which split from a query message
answered with the node's `partition-id` (node config). Every client takes part in every round
(as in the in-process engine); a failed or missing reply stops the run.

`write_app(...)` writes a runnable Flower app directory (its `pyproject.toml`, the settings in
`[tool.flwr.app.config]`, and one data file per client); `write_connection(...)` the SuperLink
connection `flwr run` reads; `read_result(path)` what the ServerApp saved at the end (the final
dispatched factors, base deltas and round records, as a `FedResult` without accuracies).
"""

from __future__ import annotations

import json
from pathlib import Path

from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MessageType, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg
from flwr.serverapp.strategy.strategy_utils import sample_nodes

SERVER_APP = "neurips26.papers.fed_harness.flower:server_app"
CLIENT_APP = "neurips26.papers.fed_harness.flower:client_app"
SHARED = "all"   # key prefix of what every client receives (head, changed frozen weights, reference bases)


# ---------------------------------------------------------------- run config
def run_config(ranks, aggregator: str, settings, classes: int, *, data_dir, out, aggregator_settings=None,
               aggregator_modules=(), encoder=None, timeout: float = 600.0, threads: int = 1) -> dict:
    """The app's `[tool.flwr.app.config]` (Flower config values: str, int, float, bool). `threads`:
    torch's thread count on the server and every client (float reductions change with it)."""
    return {
        "num-server-rounds": int(settings.rounds), "local-steps": int(settings.local_steps),
        "batch-size": int(settings.batch_size), "lr": float(settings.lr), "weight-decay": float(settings.weight_decay),
        "targets": ",".join(settings.targets), "seed": int(settings.seed),
        "conflict-rank": int(settings.conflict_rank or 0),
        "ranks": ",".join(str(int(r)) for r in ranks), "aggregator": aggregator,
        "aggregator-settings": json.dumps(aggregator_settings or {}, sort_keys=True),
        "aggregator-modules": ",".join(aggregator_modules), "encoder": str(encoder or ""), "classes": int(classes),
        "data-dir": str(Path(data_dir).resolve()), "out-path": str(Path(out).resolve()), "round-timeout": float(timeout),
        "threads": int(threads),
    }


def _settings(cfg):
    from .simulation import FedSettings

    return FedSettings(rounds=int(cfg["num-server-rounds"]), local_steps=int(cfg["local-steps"]),
                       batch_size=int(cfg["batch-size"]), lr=float(cfg["lr"]), weight_decay=float(cfg["weight-decay"]),
                       targets=tuple(str(cfg["targets"]).split(",")), seed=int(cfg["seed"]),
                       conflict_rank=int(cfg["conflict-rank"]) or None)


def _ranks(cfg) -> list[int]:
    return [int(r) for r in str(cfg["ranks"]).split(",")]


def _aggregator(cfg):
    import importlib

    from . import aggregators

    for mod in filter(None, str(cfg.get("aggregator-modules", "")).split(",")):
        importlib.import_module(mod.strip())  # registers a paper's aggregators
    return aggregators.make(str(cfg["aggregator"]), **json.loads(str(cfg.get("aggregator-settings") or "{}")))


def _base(cfg):
    from . import tasks

    return tasks.last_layer(str(cfg.get("encoder") or "") or None, int(cfg["classes"]))


# ---------------------------------------------------------------- app directory
def client_data_path(data_dir, partition: int) -> Path:
    return Path(data_dir) / f"client-{int(partition)}.safetensors"


def write_client_data(path, train, part) -> Path:
    """Client `part`'s examples of `train` (in its split's order, so the minibatch positions
    index the same rows as the in-process engine's `train`[part])."""
    import torch

    from neurips26.core import io

    idx = torch.as_tensor(part)
    io.save_tensors(path, {"hidden": train.hidden[idx], "mask": train.mask[idx], "labels": train.labels[idx]},
                    {"examples": str(len(idx))})
    return Path(path)


def read_client_data(path):
    from neurips26.core import io

    from .tasks import Encoded

    t = io.load_tensors(path)
    return Encoded(t["hidden"], t["mask"], t["labels"])


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))  # a TOML basic string


def write_app(app_dir, train, parts, ranks, aggregator: str, settings, classes: int, *, aggregator_settings=None,
              aggregator_modules=(), encoder=None, out=None, timeout: float = 600.0, data=True,
              threads: int = 1) -> Path:
    """A runnable Flower app in `app_dir`: `pyproject.toml` (the components of this module and
    the run config) and `data/client-<i>.safetensors`, client i's share of `train` (`data=False`:
    the clients bring their own files, see `data-path` in the node config). The result goes to
    `out` (default `app_dir/result.safetensors`). `aggregator_modules`: modules that register
    the aggregator (a paper's `method`). Returns `app_dir`."""
    from .tasks import Encoded

    if not isinstance(train, Encoded):
        raise ValueError("the Flower engine runs the classification clients only (the MiniLM [CLS] layer); "
                         "run a causal-LM federation with simulation.run_federation")
    app_dir = Path(app_dir)
    data_dir = app_dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    if len(parts) != len(ranks):
        raise ValueError(f"{len(parts)} client splits but {len(ranks)} ranks")
    if data:
        for i, part in enumerate(parts):
            write_client_data(client_data_path(data_dir, i), train, part)
    cfg = run_config(ranks, aggregator, settings, classes, data_dir=data_dir, out=out or app_dir / "result.safetensors",
                     aggregator_settings=aggregator_settings, aggregator_modules=aggregator_modules, encoder=encoder,
                     timeout=timeout, threads=threads)
    lines = ["[project]", 'name = "fed-harness"', 'version = "1.0.0"',
             'description = "neurips26 fed_harness: a federated LoRA run (the harness aggregators, its local training)"',
             "dependencies = []  # the apps run in the environment that has neurips26 installed", "",
             "[tool.flwr.app]", 'publisher = "neurips26"', "",
             "[tool.flwr.app.components]", f'serverapp = "{SERVER_APP}"', f'clientapp = "{CLIENT_APP}"', "",
             "[tool.flwr.app.config]"] + [f"{k} = {_toml_value(v)}" for k, v in cfg.items()]
    (app_dir / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return app_dir


def write_connection(flwr_home, name: str, address: str, *, insecure: bool = False, root_certificates=None) -> Path:
    """`<flwr_home>/config.toml` with the SuperLink connection `name` at `address` (host:port),
    the default of `flwr run`; TLS unless `insecure` (loopback only)."""
    path = Path(flwr_home).expanduser() / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["[superlink]", f"default = {json.dumps(name)}", "", f"[superlink.{name}]", f"address = {json.dumps(address)}"]
    if insecure:
        lines.append("insecure = true")
    if root_certificates:
        lines.append(f"root-certificates = {json.dumps(str(Path(root_certificates).expanduser().resolve()))}")
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------- records <-> adapters
def _array(t) -> Array:
    return Array(t.detach().cpu().contiguous().numpy())


def _tensor(a: Array):
    import torch

    return torch.from_numpy(a.numpy().copy())


def _adapter_arrays(net, layers, prefix: str = "") -> dict:
    from .simulation import _lora

    out = {}
    for t in layers:
        B, A = _lora(getattr(net, t))
        out[f"{prefix}{t}.B"], out[f"{prefix}{t}.A"] = _array(B), _array(A)
    out[f"{prefix}head.weight"], out[f"{prefix}head.bias"] = _array(net.head.weight), _array(net.head.bias)
    return out


def _load_adapter(net, layers, arrays, prefix: str = "") -> None:
    """Copy B, A per module and the head (float32, bit for bit) from `arrays` into `net`."""
    import torch

    from .simulation import _lora

    with torch.no_grad():
        for t in layers:
            B, A = _lora(getattr(net, t))
            for w, key in ((B, f"{prefix}{t}.B"), (A, f"{prefix}{t}.A")):
                x = _tensor(arrays[key])
                if tuple(x.shape) != tuple(w.shape):
                    raise ValueError(f"{key}: received shape {tuple(x.shape)}, the adapter has {tuple(w.shape)}")
                w.copy_(x.to(w.dtype))
        net.head.weight.copy_(_tensor(arrays[f"{prefix}head.weight"]))
        net.head.bias.copy_(_tensor(arrays[f"{prefix}head.bias"]))


# ---------------------------------------------------------------- server
class HarnessStrategy(FedAvg):
    """FedAvg's sampling and messaging, the harness's aggregation: `aggregate_train` runs
    `Engine.server_round` (the aggregator per LoRA module, its dispatch, FedAvg of the heads) on
    the server's copies of the clients' adapters; `configure_train` sends each client its part.
    The global `ArrayRecord` holds every client's dispatched factors (`<i>.<module>.B`, `.A`,
    `<i>.head.*`) and what all clients share (`all.base.<module>`, `all.<module>.reference_basis`)."""

    def __init__(self, base, ranks, aggregator, settings):
        from . import simulation

        n = len(ranks)
        super().__init__(fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=n, min_evaluate_nodes=0,
                         min_available_nodes=n)
        self.ranks, self.agg, self.s = list(ranks), aggregator, settings
        self.layers = list(settings.targets)
        self.nets = simulation.build_clients(base, self.ranks, settings.targets, settings.seed)
        self.engine = None          # built at the first aggregation, from the clients' data sizes
        self.sizes = None
        self.partition: dict[int, int] = {}   # node id -> partition id
        self.timeout = 600.0

    def summary(self) -> None:
        from logging import INFO

        from flwr.supercore import log

        super().summary()
        log(INFO, "\t└──> fed_harness aggregator '%s', ranks %s, modules %s", self.agg.name, self.ranks, self.layers)

    def global_arrays(self) -> ArrayRecord:
        arrays = {}
        for i, net in enumerate(self.nets):
            arrays.update(_adapter_arrays(net, self.layers, f"{i}."))
        if self.engine is not None:
            for t in self.layers:
                if self.engine.base_delta[t] is not None:  # the shared frozen weight, as the engine holds it
                    arrays[f"{SHARED}.base.{t}"] = _array(getattr(self.nets[0], t).base_layer.weight)
                U = self.engine.states[t].get("reference_basis")
                if U is not None:
                    arrays[f"{SHARED}.{t}.reference_basis"] = _array(U)
        return ArrayRecord(arrays)

    def _map_partitions(self, grid: Grid, node_ids) -> None:
        ask = [n for n in node_ids if n not in self.partition]
        if not ask:
            return
        msgs = [Message(RecordDict({"config": ConfigRecord({"ask": "partition-id"})}), dst_node_id=n,
                        message_type=MessageType.QUERY) for n in ask]
        for reply in grid.send_and_receive(msgs, timeout=self.timeout):
            if reply.has_error():
                raise RuntimeError(f"node {reply.metadata.src_node_id} failed the partition query: {reply.error.reason}")
            m = next(iter(reply.content.metric_records.values()))
            self.partition[reply.metadata.src_node_id] = int(m["partition-id"])
        got = sorted(self.partition[n] for n in node_ids if n in self.partition)
        if got != list(range(len(self.ranks))):
            raise RuntimeError(f"the connected nodes hold partitions {got}; the run needs each of 0..{len(self.ranks) - 1} "
                               "exactly once (node config partition-id)")

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid):
        node_ids, _ = sample_nodes(grid, self.min_available_nodes, len(self.ranks))
        self._map_partitions(grid, node_ids)
        msgs = []
        for node in node_ids:
            pid = self.partition[node]
            mine = {k[len(f"{pid}."):]: v for k, v in arrays.items() if k.startswith(f"{pid}.")}
            mine.update({k: v for k, v in arrays.items() if k.startswith(f"{SHARED}.")})
            cfg = ConfigRecord({**dict(config), "server-round": server_round, "partition-id": pid})
            msgs.append(Message(RecordDict({self.arrayrecord_key: ArrayRecord(mine), self.configrecord_key: cfg}),
                                dst_node_id=node, message_type=MessageType.TRAIN))
        return msgs

    def aggregate_train(self, server_round: int, replies):
        from . import simulation

        valid, errors = self._check_and_log_replies(list(replies), is_train=True)
        if errors or len(valid) != len(self.ranks):
            reasons = "; ".join(f"node {m.metadata.src_node_id}: {m.error.reason}" for m in errors)
            raise RuntimeError(f"round {server_round}: {len(valid)} of {len(self.ranks)} clients replied ({reasons}); "
                               "the harness needs every client every round")
        by_pid = {}
        for msg in valid:
            m = next(iter(msg.content.metric_records.values()))
            by_pid[int(m["partition-id"])] = (msg.content.array_records[self.arrayrecord_key], m)
        if sorted(by_pid) != list(range(len(self.ranks))):
            raise RuntimeError(f"round {server_round}: replies from partitions {sorted(by_pid)}")
        sizes = [int(by_pid[i][1][self.weighted_by_key]) for i in range(len(self.ranks))]
        if self.engine is None:  # before the replies are loaded: Engine keeps the round-0 factors as the start
            self.sizes = sizes
            self.engine = simulation.Engine(self.nets, None, [range(n) for n in sizes], self.ranks, self.agg, self.s)
        elif sizes != self.sizes:
            raise RuntimeError(f"round {server_round}: client sizes {sizes} changed from {self.sizes}")
        for i in range(len(self.ranks)):
            _load_adapter(self.nets[i], self.layers, by_pid[i][0])
        e = self.engine
        e.loss_sum = sum(p * float(by_pid[i][1]["loss-sum"]) for i, p in enumerate(e.p))
        e.loss_n = int(by_pid[0][1]["steps"])
        e.server_round(server_round - 1)
        mean = e.records[-1]["loss"]
        return self.global_arrays(), MetricRecord({"loss": float(mean), self.weighted_by_key: int(sum(sizes))})

    def result(self):
        """The final dispatched factors (float64, per module and client), base deltas, records."""
        import numpy as np

        from .simulation import FedResult

        res = FedResult(np.empty((len(self.ranks), 0)), list(self.engine.records if self.engine else []))
        for t in self.layers:
            res.B[t] = [self.engine._factors(i, t)[0] for i in range(len(self.nets))]
            res.A[t] = [self.engine._factors(i, t)[1] for i in range(len(self.nets))]
            res.base_delta[t] = self.engine.base_delta[t]
        return res

    def save(self, path) -> Path:
        from neurips26.core import io

        res = self.result()
        tensors = {}
        for t in self.layers:
            for i, (b, a) in enumerate(zip(res.B[t], res.A[t])):
                tensors[f"{t}.B.{i}"], tensors[f"{t}.A.{i}"] = b, a
            if res.base_delta[t] is not None:
                tensors[f"{t}.base_delta"] = res.base_delta[t]
        meta = {"records": json.dumps(res.rounds), "layers": json.dumps(self.layers), "clients": str(len(self.ranks)),
                "aggregator": self.agg.name, "sizes": json.dumps(self.sizes)}
        io.save_tensors(path, tensors, meta)
        return Path(path)


def read_result(path):
    """What the ServerApp saved: a `FedResult` (B, A, base_delta per module, the round records;
    no accuracies: the Flower run does not evaluate)."""
    import numpy as np

    from neurips26.core import io

    from .simulation import FedResult

    t, meta = io.load_tensors(path), io.load_tensor_metadata(path)
    n = int(meta["clients"])
    res = FedResult(np.empty((n, 0)), json.loads(meta["records"]))
    for layer in json.loads(meta["layers"]):
        res.B[layer] = [t[f"{layer}.B.{i}"] for i in range(n)]
        res.A[layer] = [t[f"{layer}.A.{i}"] for i in range(n)]
        res.base_delta[layer] = t.get(f"{layer}.base_delta")
    return res


server_app = ServerApp()


@server_app.main()
def _server_main(grid: Grid, context: Context) -> None:
    import torch

    cfg = context.run_config
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(int(cfg.get("threads", 1)))
    settings = _settings(cfg)
    strategy = HarnessStrategy(_base(cfg), _ranks(cfg), _aggregator(cfg), settings)
    strategy.timeout = float(cfg.get("round-timeout", 600.0))
    with torch.no_grad():
        initial = strategy.global_arrays()
    strategy.start(grid, initial, num_rounds=settings.rounds, timeout=strategy.timeout)
    strategy.save(cfg["out-path"])


# ---------------------------------------------------------------- client
client_app = ClientApp()


def _partition(context: Context) -> int:
    if "partition-id" not in context.node_config:
        raise KeyError("the SuperNode needs --node-config 'partition-id=<i> num-partitions=<n>'")
    return int(context.node_config["partition-id"])


@client_app.query()
def _client_query(msg: Message, context: Context) -> Message:
    return Message(RecordDict({"metrics": MetricRecord({"partition-id": _partition(context)})}), reply_to=msg)


@client_app.train()
def _client_train(msg: Message, context: Context) -> Message:
    import torch

    from . import aggregators, simulation

    torch.use_deterministic_algorithms(True)
    cfg, pid = context.run_config, _partition(context)
    torch.set_num_threads(int(cfg.get("threads", 1)))
    config = msg.content["config"]
    if int(config["partition-id"]) != pid:
        raise RuntimeError(f"got partition {config['partition-id']}'s dispatch, hold partition {pid}")
    rnd = int(config["server-round"]) - 1
    settings = _settings(cfg)
    layers = list(settings.targets)
    data = read_client_data(context.node_config.get("data-path") or client_data_path(cfg["data-dir"], pid))
    arrays = msg.content["arrays"]
    net = simulation.build_clients(_base(cfg), [_ranks(cfg)[pid]], settings.targets, settings.seed)[0]
    _load_adapter(net, layers, arrays)
    states = {t: {} for t in layers}
    with torch.no_grad():
        for t in layers:
            if f"{SHARED}.base.{t}" in arrays:  # the frozen weight after the base deltas so far
                getattr(net, t).base_layer.weight.copy_(_tensor(arrays[f"{SHARED}.base.{t}"]))
            if f"{SHARED}.{t}.reference_basis" in arrays:
                states[t]["reference_basis"] = _tensor(arrays[f"{SHARED}.{t}.reference_basis"])
    opts = aggregators.client_options(_aggregator(cfg))
    device = str(context.node_config.get("device") or "cpu")  # node config: where this client trains
    net.to(device)
    loss_sum, steps = simulation.local_round(net, data, pid, rnd, settings, opts, states, device)
    metrics = MetricRecord({"num-examples": len(data.labels), "partition-id": pid, "loss-sum": loss_sum, "steps": steps})
    return Message(RecordDict({"arrays": ArrayRecord(_adapter_arrays(net, layers)), "metrics": metrics}), reply_to=msg)
