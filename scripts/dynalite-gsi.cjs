// Preloaded with `node -r` in front of dynalite (after loopback.cjs), for
// the tests of `kcltool migration`. dynalite 4 builds a global secondary
// index only at CreateTable: UpdateTable refuses a Create without
// ProvisionedThroughput (the KCL sends none on an on-demand table) and,
// with it, never adds the index. KCL 3.x adds LeaseOwnerToLeaseKeyIndex to
// a 2.x lease table by UpdateTable, and its migration tool deletes it the
// same way, so this file makes GlobalSecondaryIndexUpdates Create and
// Delete work as DynamoDB does them, in small:
//   - Create: the index is added with IndexStatus CREATING (Backfilling
//     true) and the table UPDATING; the existing items are copied into it
//     (the backfill), and after --updateTableMs both turn ACTIVE.
//     ProvisionedThroughput is refused on a PAY_PER_REQUEST table and
//     required on a provisioned one, as DynamoDB does; AttributeDefinitions
//     are merged into the table's.
//   - Delete: IndexStatus DELETING, then the index and its data are gone.
// Other updates (throughput, billing mode, Update of an index) are left to
// dynalite; mixing them with Create/Delete in one call is refused. Known
// gap: a write racing the backfill may leave a stale index entry (the
// tests write nothing while the index is built).
'use strict';
const path = require('path');

const root = path.join(__dirname, '..', 'node_modules', 'dynalite');
const validation = require(path.join(root, 'validations', 'updateTable.js'));
const db = require(path.join(root, 'db'));

// UpdateTable's AttributeDefinitions (dynalite's type check drops any field
// it does not list), and a Create whose throughput may be absent.
validation.types.AttributeDefinitions = {
  type: 'List',
  children: {
    type: 'ValueStruct<AttributeDefinition>',
    children: {
      AttributeName: { type: 'String', notNull: true },
      AttributeType: { type: 'String', notNull: true, enum: ['B', 'N', 'S'] },
    },
  },
};
delete validation.types.GlobalSecondaryIndexUpdates.children.children.Create.children.ProvisionedThroughput.notNull;

const actionPath = require.resolve(path.join(root, 'actions', 'updateTable.js'));
require(actionPath);
const original = require.cache[actionPath].exports;

function inUse(msg) {
  const err = new Error(msg);
  err.statusCode = 400;
  err.body = { __type: 'com.amazonaws.dynamodb.v20120810#ResourceInUseException', message: msg };
  return err;
}

function notFound(msg) {
  const err = new Error(msg);
  err.statusCode = 400;
  err.body = { __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException', message: msg };
  return err;
}

require.cache[actionPath].exports = function updateTable(store, data, cb) {
  const updates = (data.GlobalSecondaryIndexUpdates || []).filter((u) => u.Create || u.Delete);
  if (updates.length === 0) return original(store, data, cb);
  if (updates.length !== data.GlobalSecondaryIndexUpdates.length || data.ProvisionedThroughput || data.BillingMode) {
    return cb(db.validationError('dynalite-gsi.cjs: Create/Delete of an index cannot be mixed with other updates'));
  }
  if (updates.length > 1) {
    return cb(db.limitError('Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table'));
  }
  const key = data.TableName;
  store.tableDb.lock(key, (release) => {
    cb = release(cb);
    store.getTable(key, false, (err, table) => {
      if (err) return cb(err);
      if (table.TableStatus !== 'ACTIVE') return cb(inUse('Attempt to change a resource which is still in use: Table is being updated: ' + key));
      const u = updates[0];
      const indexes = table.GlobalSecondaryIndexes || [];
      if (u.Create) return create(store, table, data, u.Create, indexes, cb);
      return remove(store, table, u.Delete, indexes, cb);
    });
  });
};

function create(store, table, data, c, indexes, cb) {
  if (indexes.some((i) => i.IndexName === c.IndexName)) {
    return cb(db.validationError('One or more parameter values were invalid: Index already exists: ' + c.IndexName));
  }
  const onDemand = ((table.BillingModeSummary || {}).BillingMode || 'PROVISIONED') === 'PAY_PER_REQUEST';
  if (onDemand && c.ProvisionedThroughput) {
    return cb(db.validationError('One or more parameter values were invalid: ProvisionedThroughput should not be specified for index: ' +
      c.IndexName + ' when BillingMode is PAY_PER_REQUEST'));
  }
  if (!onDemand && !c.ProvisionedThroughput) {
    return cb(db.validationError('One or more parameter values were invalid: ProvisionedThroughput must be specified for index: ' + c.IndexName));
  }
  const defs = table.AttributeDefinitions.slice();
  for (const d of data.AttributeDefinitions || []) {
    if (!defs.some((x) => x.AttributeName === d.AttributeName)) defs.push(d);
  }
  for (const k of c.KeySchema) {
    if (!defs.some((x) => x.AttributeName === k.AttributeName)) {
      return cb(db.validationError('One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [' +
        c.KeySchema.map((x) => x.AttributeName).join(', ') + ']'));
    }
  }
  const index = {
    IndexName: c.IndexName,
    KeySchema: c.KeySchema,
    Projection: c.Projection,
    IndexStatus: 'CREATING',
    Backfilling: true,
    ProvisionedThroughput: Object.assign({ ReadCapacityUnits: 0, WriteCapacityUnits: 0 }, c.ProvisionedThroughput, { NumberOfDecreasesToday: 0 }),
    IndexSizeBytes: 0,
    ItemCount: 0,
    IndexArn: table.TableArn + '/index/' + c.IndexName,
  };
  table.AttributeDefinitions = defs;
  table.GlobalSecondaryIndexes = indexes.concat([index]);
  table.TableStatus = 'UPDATING';
  store.tableDb.put(table.TableName, table, (err) => {
    if (err) return cb(err);
    // The backfill: every item already written gets its index entry (new
    // writes add theirs, the index being in the table's description now).
    const indexDb = store.getIndexDb('Global', table.TableName, c.IndexName);
    db.lazy(store.getItemDb(table.TableName).createValueStream(), cb).join((items) => {
      let pending = 0;
      for (const item of items) {
        for (const p of db.getIndexActions([index], null, item, table).puts) {
          pending++;
          indexDb.put(p.key, p.item, () => { pending--; });
        }
      }
      setTimeout(function activate() {
        if (pending > 0) return setTimeout(activate, 10);
        index.IndexStatus = 'ACTIVE';
        delete index.Backfilling;
        index.ItemCount = items.length;
        table.TableStatus = 'ACTIVE';
        store.tableDb.put(table.TableName, table, (err) => {
          if (err && !/Database is (not open|closed)/.test(err)) console.error(err.stack || err);
        });
      }, store.options.updateTableMs);
      cb(null, { TableDescription: table });
    });
  });
}

function remove(store, table, d, indexes, cb) {
  const index = indexes.find((i) => i.IndexName === d.IndexName);
  if (!index) return cb(notFound('Requested resource not found: Index: ' + d.IndexName + ' not found'));
  index.IndexStatus = 'DELETING';
  table.TableStatus = 'UPDATING';
  store.tableDb.put(table.TableName, table, (err) => {
    if (err) return cb(err);
    setTimeout(() => {
      table.GlobalSecondaryIndexes = indexes.filter((i) => i !== index);
      if (table.GlobalSecondaryIndexes.length === 0) delete table.GlobalSecondaryIndexes;
      table.TableStatus = 'ACTIVE';
      store.deleteIndexDb('Global', table.TableName, d.IndexName, () => {
        store.tableDb.put(table.TableName, table, (err) => {
          if (err && !/Database is (not open|closed)/.test(err)) console.error(err.stack || err);
        });
      });
    }, store.options.updateTableMs);
    cb(null, { TableDescription: table });
  });
}
