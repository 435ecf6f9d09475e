// Package processor is the handler side of `kcltool run`: the protocols a
// shard's records are handed over by, as the KCL's processor package and
// its MultiLangDaemon are (docs/handler.md). It takes a Batch of one shard
// and reports, through a Checkpointer, what may be checkpointed; it never
// reads a stream nor writes a lease itself.
//
//   - a process per batch (--exec, --): Handler runs one, Policy retries,
//     bisects and gives up on records (failure files), Slots bounds how
//     many run at once;
//   - MultiLang (--multilang): one long-lived child per reading of a shard
//     speaking the KCL MultiLangDaemon's line protocol.
//
// Both are a RecordProcessor, which package runner drives through a
// shard's lifecycle (initialize, batches, lease lost, shard end,
// shutdown). Time comes from the clock it is given; the environment a
// handler inherits is Handler.Env, given by the caller.
package processor
