'use strict';
// The official Node SDK (unleash-client) pointed at the service, driven by
// tests/client/sdk/test_node_sdk.py over JSON lines: the first stdin line is the configuration
// ({url, token, appName, instanceId, mode: "polling" | "streaming", refreshMs, metricsMs,
// flags, contexts}); each later line is one command:
//   {"evaluate": true}                        -> {"event": "evaluated", "results": [...]}, for
//                                                each context, for each flag, isEnabled and
//                                                getVariant: {"enabled", "variant"}
//   {"wait": {"flag", "context", "enabled"}}  -> {"event": "waiting", "enabled"} (its answer
//                                                now), then, once isEnabled answers `enabled`,
//                                                {"event": "seen", "ms"}
//   {"finish": {"metrics": true | false}}     -> when metrics, waits until the SDK has sent
//                                                metrics after the last evaluate; then
//                                                {"event": "done", "mode", "registered", "sent",
//                                                "warnings", "errors"}, and exits
// It prints {"event": "synchronized", "mode"} once the SDK has its first flags. Any failure
// (no flags, no metrics, a wait that never ends) is printed as {"event": "failed"} and the
// exit status is 1.
const readline = require('node:readline');
const { Unleash, InMemStorageProvider } = require('unleash-client');

const SYNC_TIMEOUT_MS = 15000;
const WAIT_TIMEOUT_MS = 15000;
const SENT_TIMEOUT_MS = 15000;
const WAIT_STEP_MS = 1;

function say(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function fail(reason) {
  say({ event: 'failed', reason });
  process.exit(1);
}

function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function start(config) {
  const seen = { registered: 0, sent: 0, warnings: [], errors: [] };
  const onSent = [];
  const unleash = new Unleash({
    url: config.url,
    appName: config.appName,
    instanceId: config.instanceId,
    environment: config.environment,
    refreshInterval: config.refreshMs,
    metricsInterval: config.metricsMs,
    customHeaders: { Authorization: config.token },
    storageProvider: new InMemStorageProvider(),
    experimentalMode: { type: config.mode },
    skipInstanceCountWarning: true,
  });
  unleash.on('registered', () => {
    seen.registered += 1;
  });
  unleash.on('sent', () => {
    seen.sent += 1;
    for (const resolve of onSent.splice(0)) {
      resolve();
    }
  });
  unleash.on('warn', (message) => seen.warnings.push(String(message)));
  unleash.on('error', (error) => seen.errors.push(String(error && error.message ? error.message : error)));
  return { unleash, seen, onSent };
}

function evaluate(unleash, config) {
  return config.contexts.map((context) =>
    config.flags.map((flag) => ({
      enabled: unleash.isEnabled(flag, context),
      variant: unleash.getVariant(flag, context),
    })),
  );
}

function waitFor(unleash, { flag, context, enabled }) {
  const started = performance.now();
  return within(
    WAIT_TIMEOUT_MS,
    `${flag} enabled=${enabled}`,
    new Promise((resolve) => {
      const look = () => {
        if (unleash.isEnabled(flag, context) === enabled) {
          resolve(performance.now() - started);
        } else {
          setTimeout(look, WAIT_STEP_MS);
        }
      };
      look();
    }),
  );
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) {
    fail('no configuration on stdin');
  }
  const config = JSON.parse(first.value);
  const { unleash, seen, onSent } = start(config);
  let sentBeforeEvaluate = 0;
  await within(SYNC_TIMEOUT_MS, 'synchronized', new Promise((resolve) => unleash.once('synchronized', resolve)));
  say({ event: 'synchronized', mode: unleash.repository.getMode() });
  for (let next = await lines.next(); !next.done; next = await lines.next()) {
    const command = JSON.parse(next.value);
    if (command.evaluate) {
      sentBeforeEvaluate = seen.sent;
      say({ event: 'evaluated', results: evaluate(unleash, config) });
    } else if (command.wait) {
      const { flag, context } = command.wait;
      say({ event: 'waiting', enabled: unleash.isEnabled(flag, context) });
      const ms = await waitFor(unleash, command.wait);
      say({ event: 'seen', ms });
    } else if (command.finish) {
      if (command.finish.metrics && seen.sent === sentBeforeEvaluate) {
        await within(SENT_TIMEOUT_MS, 'metrics sent', new Promise((resolve) => onSent.push(resolve)));
      }
      say({ event: 'done', mode: unleash.repository.getMode(), ...seen });
      unleash.destroy();
      process.exit(0);
    } else {
      fail(`unknown command ${next.value}`);
    }
  }
  fail('stdin closed before finish');
}

main().catch((error) => fail(String(error && error.stack ? error.stack : error)));
