// Preloaded with `node -r` in front of s3rver. s3rver knows one access key,
// S3RVER, and answers any other with InvalidAccessKeyId; it never checks a
// Signature Version 4 signature. dynalite and kinesis-local take any key,
// and the tests and `scripts/localaws.sh env` use "local": every key is
// taken here as s3rver's one account, so the same environment reaches all
// three servers.
'use strict';
const path = require('path');
const AWSAccount = require(path.join(__dirname, '..', 'node_modules', 's3rver', 'lib', 'models', 'account.js'));
const get = AWSAccount.registry.get.bind(AWSAccount.registry);
AWSAccount.registry.get = (id) => get(id) || AWSAccount.DUMMY_ACCOUNT;
