// The e2e files' shared setup: the stack started before a file's tests and closed after them,
// and tenants made once it runs. What these answer are getters: read them inside tests and hooks.
import { afterAll, beforeAll } from "vitest";
import { systemClock, type Clock } from "@icv/platform";
import { startStack, type Stack, type TenantKeys } from "./stack.ts";

function ready<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} is made in beforeAll: read it inside a test or a hook`);
  return value;
}

/** startStack(env, clock) in beforeAll, close() in afterAll; the answer stands for the started stack. */
export function useStack(
  env: Record<string, string> | (() => Record<string, string>) = {},
  clock: Clock = systemClock,
  opts: Parameters<typeof startStack>[2] = {},
): Stack {
  let started: Stack | undefined;
  beforeAll(async () => {
    // a function: the env is read once the file's other beforeAll hooks ran (local servers' ports)
    started = await startStack(typeof env === "function" ? env() : env, clock, opts);
  });
  afterAll(() => started?.close());
  const s = () => ready(started, "the stack");
  return {
    get url() {
      return s().url;
    },
    get env() {
      return s().env;
    },
    get dataDir() {
      return s().dataDir;
    },
    get gateway() {
      return s().gateway;
    },
    get services() {
      return s().services;
    },
    get admin() {
      return s().admin;
    },
    get adminHeaders() {
      return s().adminHeaders;
    },
    tenant: (name) => s().tenant(name),
    restart: (name, whileDown) => s().restart(name, whileDown),
    close: () => s().close(),
  };
}

/** A tenant of `stack` made in beforeAll (after the stack started); the answer stands for its keys. */
export function useTenant(stack: Stack, name: string): TenantKeys {
  let keys: TenantKeys | undefined;
  beforeAll(async () => {
    keys = await stack.tenant(name);
  });
  const k = () => ready(keys, `tenant ${name}`);
  return {
    get tenantId() {
      return k().tenantId;
    },
    get liveKey() {
      return k().liveKey;
    },
    get testKey() {
      return k().testKey;
    },
  };
}
