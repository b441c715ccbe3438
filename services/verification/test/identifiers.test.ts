import { describe, it, expect } from "vitest";
import { createHash } from "node:crypto";
import { base58, bech32, bech32m } from "@scure/base";
import { AppError } from "@icv/platform/errors.ts";
import { maskIdentifier, normalizeIdentifier, type AssetType } from "../src/identifiers.ts";

// ---------------------------------------------------------------------------------------------
// helpers

function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

function expectInvalid(type: AssetType, channel: string, raw: string): AppError {
  const err = errorOf(() => normalizeIdentifier(type, channel, raw));
  expect(err, `expected ${type}/${channel} ${JSON.stringify(raw)} to be rejected`).toBeInstanceOf(AppError);
  const appErr = err as AppError;
  expect(appErr.code).toBe("invalid_identifier");
  expect(appErr.message.length).toBeGreaterThan(0);
  return appErr;
}

const sha256d = (data: Uint8Array): Uint8Array =>
  createHash("sha256").update(createHash("sha256").update(data).digest()).digest();

/** version byte + payload + first 4 bytes of double SHA-256, in base58. */
function base58check(version: number, payload: Uint8Array): string {
  const body = new Uint8Array([version, ...payload]);
  const sum = sha256d(body).subarray(0, 4);
  return base58.encode(new Uint8Array([...body, ...sum]));
}

/** Deterministic test bytes: 0, step, 2*step, ... (mod 256) offset by `start`. */
function bytes(length: number, start = 1, step = 7): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (start + i * step) & 0xff);
}

function segwit(hrp: string, version: number, program: Uint8Array, coder: typeof bech32 = version === 0 ? bech32 : bech32m): string {
  return coder.encode(hrp, [version, ...coder.toWords(program)]);
}

/** Replace the character at `index` with a different one from `alphabet`. */
function tamper(s: string, index: number, alphabet: string): string {
  const c = s[index];
  const replacement = alphabet[(alphabet.indexOf(c) + 1) % alphabet.length];
  return s.slice(0, index) + replacement + s.slice(index + 1);
}

const BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const BECH32_ALPHABET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

const hash160 = bytes(20, 0x3c, 13);

// ---------------------------------------------------------------------------------------------
// generic input rules

describe("normalizeIdentifier: generic input rules", () => {
  const cases: Array<[string, AssetType, string, string]> = [
    ["empty string", "email", "email", ""],
    ["only spaces", "email", "email", "   "],
    ["over 320 characters", "account", "coinbase", "a".repeat(321)],
    ["NUL byte", "social", "github", "john\u0000doe"],
    ["newline", "email", "email", "user@example.com\n"],
    ["tab", "domain", "dns", "\texample.com"],
    ["DEL", "account", "kraken", "abc\u007fdef"],
    ["C1 control", "social", "x", "john\u0085"],
    ["escape in phone", "phone", "sms", "+14155552671\u001b"],
  ];
  it.each(cases)("rejects %s", (_name, type, channel, raw) => {
    expectInvalid(type, channel, raw);
  });

  it("accepts exactly 320 characters before trimming", () => {
    const raw = `${" ".repeat(300)}ABCDEFGHIJ${" ".repeat(10)}`;
    expect(raw.length).toBe(320);
    expect(normalizeIdentifier("account", "coinbase", raw)).toEqual({ value: "ABCDEFGHIJ", canonical: "ABCDEFGHIJ" });
  });

  it("never echoes the raw input in the message", () => {
    const err = expectInvalid("phone", "sms", "+1 SECRET-VALUE 555");
    expect(err.message).not.toContain("SECRET");
  });

  it("rejects an unknown wallet channel as invalid_channel_for_type", () => {
    const err = errorOf(() => normalizeIdentifier("wallet", "dogecoin", "D8vFz4p1L37jdg47HXKtSHA5uYLYxbGgPD"));
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("invalid_channel_for_type");
  });
});

// ---------------------------------------------------------------------------------------------
// phone

describe("phone", () => {
  const valid: Array<[string, string]> = [
    ["+370 691 99199", "+37069199199"],
    ["+1 (415) 555-2671", "+14155552671"],
    ["+37069199199", "+37069199199"],
    ["00370 691 99199", "+37069199199"],
    ["0014155552671", "+14155552671"],
    ["  +44 20 7946 0958  ", "+442079460958"],
    ["+49 30 901820", "+4930901820"],
    ["+86 138 0013 8000", "+8613800138000"],
    ["+33.1.42.68.53.00", "+33142685300"],
    ["+1/415/555/2671", "+14155552671"],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalizeIdentifier("phone", "sms", raw)).toEqual({ value: expected, canonical: expected });
  });

  it("ignores the channel", () => {
    for (const channel of ["whatsapp", "telegram", "sms"]) {
      expect(normalizeIdentifier("phone", channel, "+370 691 99199").value).toBe("+37069199199");
    }
  });

  const invalid: Array<[string, string]> = [
    ["national format without +", "37069199199"],
    ["national format with trunk 0", "(415) 555-2671"],
    ["single 0 prefix", "0370 691 99199"],
    ["too short", "+12"],
    ["too long", "+370691991990000"],
    ["only plus", "+"],
    ["double plus", "++14155552671"],
    ["plus in the middle", "+1415+5552671"],
    ["trailing letters", "+1 415 555 2671 abc"],
    ["vanity letters", "+1 800 FLOWERS"],
    ["extension", "+1-415-555-2671 ext. 5"],
    ["RFC 3966 extension", "+14155552671;ext=1"],
    ["tel: URI", "tel:+14155552671"],
    ["unknown country code", "+999 123 456 789"],
    ["invalid number for country", "+1 015 555 2671"],
    ["email", "user@example.com"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("phone", "sms", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// email

describe("email", () => {
  const valid: Array<[string, string]> = [
    ["John.Doe+tag@Example.COM", "john.doe+tag@example.com"],
    ["John.Doe@Example.COM", "john.doe@example.com"],
    ["  user@example.com  ", "user@example.com"],
    ["a@b.co", "a@b.co"],
    ["first.last@sub.example.co.uk", "first.last@sub.example.co.uk"],
    ["user@www.example.com", "user@www.example.com"],
    ["user@bücher.de", "user@xn--bcher-kva.de"],
    ["user@BÜCHER.DE", "user@xn--bcher-kva.de"],
    ["user@xn--bcher-kva.de", "user@xn--bcher-kva.de"],
    ["o'brien_x-y=z@example.org", "o'brien_x-y=z@example.org"],
    [`${"a".repeat(64)}@example.com`, `${"a".repeat(64)}@example.com`],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalizeIdentifier("email", "email", raw)).toEqual({ value: expected, canonical: expected });
  });

  const longDomain = `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.com`; // 195 chars
  const invalid: Array<[string, string]> = [
    ["no @", "john.example.com"],
    ["two @", "a@b@example.com"],
    ["empty local part", "@example.com"],
    ["empty domain", "user@"],
    ["single-label domain", "user@localhost"],
    ["domain without a dot", "user@example"],
    ["leading dot in local part", ".user@example.com"],
    ["trailing dot in local part", "user.@example.com"],
    ["double dot in local part", "user..x@example.com"],
    ["space in local part", "us er@example.com"],
    ["quoted local part", '"john doe"@example.com'],
    ["non-ASCII local part", "jöhn@example.com"],
    ["local part over 64", `${"a".repeat(65)}@example.com`],
    ["underscore in domain", "user@exa_mple.com"],
    ["label starting with hyphen", "user@-example.com"],
    ["label ending with hyphen", "user@example-.com"],
    ["empty label", "user@example..com"],
    ["trailing dot in domain", "user@example.com."],
    ["IPv4 domain", "user@1.2.3.4"],
    ["IP literal domain", "user@[1.2.3.4]"],
    ["numeric TLD", "user@example.123"],
    ["domain with port", "user@example.com:25"],
    ["domain with path", "user@example.com/x"],
    ["invalid punycode", "user@xn--zz.de"],
    ["total over 254", `${"a".repeat(60)}@${longDomain}`],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("email", "email", raw);
  });

  it("counts the total length on the normalized address", () => {
    expect(`${"a".repeat(58)}@${longDomain}`.length).toBe(254);
    expect(normalizeIdentifier("email", "email", `${"a".repeat(58)}@${longDomain}`).value).toHaveLength(254);
  });
});

// ---------------------------------------------------------------------------------------------
// domain

describe("domain", () => {
  const valid: Array<[string, string]> = [
    ["https://WWW.Example.COM/", "example.com"],
    ["api.example.com", "api.example.com"],
    ["bücher.de", "xn--bcher-kva.de"],
    ["example.com", "example.com"],
    ["EXAMPLE.COM", "example.com"],
    ["www.example.com", "example.com"],
    ["http://example.com", "example.com"],
    ["example.com.", "example.com"],
    ["example.com:8080", "example.com"],
    ["example.com/some/path", "example.com"],
    ["example.com?q=1", "example.com"],
    ["example.com#frag", "example.com"],
    ["http://user:pass@Example.com:443/path?q=1#f", "example.com"],
    ["//example.com/x", "example.com"],
    ["ftp://files.example.org", "files.example.org"],
    ["https://www.bücher.de/katalog", "xn--bcher-kva.de"],
    ["例え.テスト", "xn--r8jz45g.xn--zckzah"],
    ["xn--bcher-kva.de", "xn--bcher-kva.de"],
    ["www.www.example.com", "www.example.com"],
    ["sub.www.example.com", "sub.www.example.com"],
    ["www.com", "www.com"],
    ["a-b.example.co.uk", "a-b.example.co.uk"],
    ["123.example.com", "123.example.com"],
    ["  example.com  ", "example.com"],
    [`${"a".repeat(63)}.com`, `${"a".repeat(63)}.com`],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalizeIdentifier("domain", "dns", raw)).toEqual({ value: expected, canonical: expected });
  });

  const over253 = [1, 2, 3, 4].map((i) => String(i).repeat(63)).join(".") + ".com"; // 259 chars
  const invalid: Array<[string, string]> = [
    ["single label", "localhost"],
    ["single label URL", "https://localhost/"],
    ["IPv4", "1.2.3.4"],
    ["IPv4 URL", "http://1.2.3.4:8080/"],
    ["IPv6", "[::1]"],
    ["IPv6 URL", "http://[2001:db8::1]/"],
    ["numeric TLD", "example.123"],
    ["underscore", "exa_mple.com"],
    ["label starting with hyphen", "-example.com"],
    ["label ending with hyphen", "example-.com"],
    ["empty label", "a..com"],
    ["two trailing dots", "example.com.."],
    ["label over 63", `${"a".repeat(64)}.com`],
    ["total over 253", over253],
    ["space", "exa mple.com"],
    ["non-numeric port", "example.com:http"],
    ["percent-encoding", "%65xample.com"],
    ["email address", "user@example.com"],
    ["scheme only", "https://"],
    ["path only", "/path"],
    ["invalid punycode", "xn--zz.de"],
    ["only www.", "www."],
    ["backslash", "example.com\\evil"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("domain", "dns", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// ethereum

describe("wallet / ethereum", () => {
  // EIP-55 reference vectors.
  const checksummed = [
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
    "0xde709f2102306220921060314715629080e2fb77",
    "0x27b1fdb04752bbc536007a920d24acb045561c26",
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
  ];
  it.each(checksummed)("accepts checksummed %s", (addr) => {
    expect(normalizeIdentifier("wallet", "ethereum", addr)).toEqual({ value: addr, canonical: addr.toLowerCase() });
  });

  it.each(checksummed)("accepts the all-lower and all-upper forms of %s and checksums them", (addr) => {
    const lower = `0x${addr.slice(2).toLowerCase()}`;
    const upper = `0x${addr.slice(2).toUpperCase()}`;
    expect(normalizeIdentifier("wallet", "ethereum", lower)).toEqual({ value: addr, canonical: lower });
    expect(normalizeIdentifier("wallet", "ethereum", upper)).toEqual({ value: addr, canonical: lower });
  });

  it("trims surrounding spaces", () => {
    expect(normalizeIdentifier("wallet", "ethereum", "  0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed ").value).toBe(
      "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    );
  });

  const invalid: Array<[string, string]> = [
    ["wrong checksum (one letter case flipped)", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"],
    ["wrong checksum (another flip)", "0xfb6916095ca1df60bB79Ce92cE3Ea74c37c5d359"],
    ["no 0x prefix", "5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"],
    ["0X prefix", "0X5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"],
    ["39 hex chars", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beae"],
    ["41 hex chars", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed0"],
    ["non-hex character", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beagd"],
    ["ENS name", "vitalik.eth"],
    ["inner space", "0x5aaeb6053f3e94c9b9a09f 33669435e7ef1beaed"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("wallet", "ethereum", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// solana

describe("wallet / solana", () => {
  const generated = base58.encode(bytes(32, 200, 31));
  const withLeadingZero = base58.encode(new Uint8Array([0, ...bytes(31, 5, 3)]));
  const valid = [
    "11111111111111111111111111111111", // system program: 32 zero bytes
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
    generated,
    withLeadingZero,
  ];
  it.each(valid)("accepts %s and keeps its case", (addr) => {
    expect(base58.decode(addr)).toHaveLength(32);
    expect(normalizeIdentifier("wallet", "solana", addr)).toEqual({ value: addr, canonical: addr });
  });

  const invalid: Array<[string, string]> = [
    ["31 bytes", base58.encode(bytes(31, 200, 31))],
    ["33 bytes", base58.encode(bytes(33, 200, 31))],
    ["64 bytes", base58.encode(bytes(64, 9, 5))],
    ["character 0", `0${generated.slice(1)}`],
    ["character O", `O${generated.slice(1)}`],
    ["character I", `I${generated.slice(1)}`],
    ["character l", `l${generated.slice(1)}`],
    ["ethereum address", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"],
    ["too short", "1111"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("wallet", "solana", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// bitcoin

describe("wallet / bitcoin", () => {
  const p2pkh = base58check(0x00, hash160);
  const p2sh = base58check(0x05, hash160);
  const testP2pkh = base58check(0x6f, hash160);
  const testP2sh = base58check(0xc4, hash160);
  const p2wpkh = segwit("bc", 0, hash160);
  const p2wsh = segwit("bc", 0, bytes(32, 11, 17));
  const p2tr = segwit("bc", 1, bytes(32, 99, 23));
  const testP2wpkh = segwit("tb", 0, hash160);
  const v16 = segwit("bc", 16, bytes(2));
  const v1Max = segwit("bc", 1, bytes(40));

  it("builds the expected address shapes", () => {
    expect(p2pkh.startsWith("1")).toBe(true);
    expect(p2sh.startsWith("3")).toBe(true);
    expect(testP2pkh[0]).toMatch(/[mn]/);
    expect(testP2sh.startsWith("2")).toBe(true);
    expect(p2wpkh.startsWith("bc1q")).toBe(true);
    expect(p2tr.startsWith("bc1p")).toBe(true);
  });

  const valid: Array<[string, string, string]> = [
    ["genesis P2PKH", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"],
    ["built P2PKH", p2pkh, p2pkh],
    ["built P2SH", p2sh, p2sh],
    ["built testnet P2PKH", testP2pkh, testP2pkh],
    ["built testnet P2SH", testP2sh, testP2sh],
    ["built P2WPKH", p2wpkh, p2wpkh],
    ["built P2WSH", p2wsh, p2wsh],
    ["built P2TR", p2tr, p2tr],
    ["built testnet P2WPKH", testP2wpkh, testP2wpkh],
    ["built v16, 2-byte program", v16, v16],
    ["built v1, 40-byte program", v1Max, v1Max],
    ["upper-case P2WPKH (lower-cased)", p2wpkh.toUpperCase(), p2wpkh],
    [
      "BIP-173 vector P2WSH",
      "bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3",
      "bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3",
    ],
    [
      "BIP-350 vector P2TR",
      "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
      "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
    ],
  ];
  it.each(valid)("accepts %s", (_name, raw, expected) => {
    expect(normalizeIdentifier("wallet", "bitcoin", raw)).toEqual({ value: expected, canonical: expected });
  });

  const mixedCase = p2wpkh.slice(0, 10) + p2wpkh.slice(10).toUpperCase();
  const invalid: Array<[string, string]> = [
    ["tampered P2PKH", tamper(p2pkh, 10, BASE58_ALPHABET)],
    ["tampered P2SH", tamper(p2sh, 20, BASE58_ALPHABET)],
    ["tampered genesis", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb"],
    ["P2PKH with case changed", p2pkh.slice(0, 5) + p2pkh.slice(5).toUpperCase()],
    ["unknown version byte", base58check(0x01, hash160)],
    ["litecoin-style version byte", base58check(0x30, hash160)],
    ["21-byte payload", base58check(0x00, bytes(21))],
    ["19-byte payload", base58check(0x00, bytes(19))],
    ["checksum over wrong data", base58.encode(new Uint8Array([0, ...hash160, 1, 2, 3, 4]))],
    ["tampered P2WPKH", tamper(p2wpkh, 15, BECH32_ALPHABET)],
    ["tampered P2TR", tamper(p2tr, 30, BECH32_ALPHABET)],
    ["mixed-case bech32", mixedCase],
    ["v0 encoded with bech32m", segwit("bc", 0, hash160, bech32m)],
    ["v1 encoded with bech32", segwit("bc", 1, bytes(32), bech32)],
    ["v0 with a 21-byte program", segwit("bc", 0, bytes(21))],
    ["v0 with a 33-byte program", segwit("bc", 0, bytes(33))],
    ["v1 with a 1-byte program", segwit("bc", 1, bytes(1))],
    ["v1 with a 41-byte program", segwit("bc", 1, bytes(41))],
    ["witness version 17", bech32m.encode("bc", [17, ...bech32m.toWords(bytes(32))])],
    ["regtest prefix", segwit("bcrt", 0, hash160)],
    ["litecoin prefix", segwit("ltc", 0, hash160)],
    ["bc1 with no data", "bc1"],
    ["non-canonical padding", bech32.encode("bc", [0, ...bech32.toWords(hash160), 1])],
    ["ethereum address", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"],
    ["base58 characters outside the alphabet", "1A1zP1eP5QGefi2DMPTfTL5SLmv7Divf0a"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("wallet", "bitcoin", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// social

describe("social", () => {
  const valid: Array<[string, string]> = [
    ["@JohnDoe", "johndoe"],
    ["JohnDoe", "johndoe"],
    ["  @john.doe_99-x  ", "john.doe_99-x"],
    ["a", "a"],
    ["@A", "a"],
    ["x".repeat(100), "x".repeat(100)],
    [`@${"Y".repeat(100)}`, "y".repeat(100)],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalizeIdentifier("social", "github", raw)).toEqual({ value: expected, canonical: expected });
  });

  it("behaves the same for every social channel", () => {
    for (const channel of ["github", "google", "facebook", "x", "linkedin", "instagram", "youtube", "tiktok"]) {
      expect(normalizeIdentifier("social", channel, "@Some.User").value).toBe("some.user");
    }
  });

  const invalid: Array<[string, string]> = [
    ["only @", "@"],
    ["double @", "@@john"],
    ["space inside", "john doe"],
    ["space after @", "@ john"],
    ["punctuation", "john!"],
    ["slash (URL)", "github.com/john"],
    ["non-ASCII letter", "jöhn"],
    ["over 100 characters", "x".repeat(101)],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("social", "github", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// account

describe("account", () => {
  const valid: Array<[string, string]> = [
    ["ACCT-123_abc", "ACCT-123_abc"],
    ["  ABC123  ", "ABC123"],
    ["8f14e45f-ceea-467f-a0e6-2a4f1c6b7e9d", "8f14e45f-ceea-467f-a0e6-2a4f1c6b7e9d"],
    ["User.Name+x@Example.COM", "user.name+x@example.com"],
    ["trader@bücher.de", "trader@xn--bcher-kva.de"],
    ["k".repeat(255), "k".repeat(255)],
    ["a", "a"],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalizeIdentifier("account", "coinbase", raw)).toEqual({ value: expected, canonical: expected });
    expect(normalizeIdentifier("account", "kraken", raw)).toEqual({ value: expected, canonical: expected });
  });

  const invalid: Array<[string, string]> = [
    ["inner space", "has space"],
    ["over 255 characters", "k".repeat(256)],
    ["non-ASCII", "naïve"],
    ["invalid email", "bad@"],
    ["email with two @", "a@b@example.com"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("account", "coinbase", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// telegram_bot

describe("telegram_bot", () => {
  const valid: Array<[string, string, string]> = [
    ["@MyTestBot", "@MyTestBot", "@mytestbot"],
    ["MyTestBot", "@MyTestBot", "@mytestbot"],
    ["my_test_bot", "@my_test_bot", "@my_test_bot"],
    ["  @example_BOT  ", "@example_BOT", "@example_bot"],
    ["https://t.me/ExampleBot", "@ExampleBot", "@examplebot"],
    ["http://t.me/ExampleBot/", "@ExampleBot", "@examplebot"],
    ["t.me/example_bot", "@example_bot", "@example_bot"],
    ["https://T.ME/ExampleBot?start=abc", "@ExampleBot", "@examplebot"],
    ["https://telegram.me/ExampleBot", "@ExampleBot", "@examplebot"],
    ["@mybot", "@mybot", "@mybot"],
    [`${"a".repeat(29)}bot`, `@${"a".repeat(29)}bot`, `@${"a".repeat(29)}bot`],
  ];
  it.each(valid)("normalizes %j", (raw, value, canonical) => {
    expect(normalizeIdentifier("telegram_bot", "telegram_bot_token", raw)).toEqual({ value, canonical });
  });

  const invalid: Array<[string, string]> = [
    ["too short", "@bot"],
    ["4 characters", "@abot"],
    ["does not end in bot", "@example_user"],
    ["over 32 characters", `${"a".repeat(30)}bot`],
    ["hyphen", "@my-test-bot"],
    ["space", "@my test bot"],
    ["double @", "@@mytestbot"],
    ["other host", "https://example.com/mytestbot"],
    ["t.me without a name", "https://t.me/"],
    ["t.me with a deeper path", "https://t.me/mytestbot/123"],
    ["non-ASCII", "@mÿtestbot"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("telegram_bot", "telegram_bot_token", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// masking

describe("maskIdentifier", () => {
  const cases: Array<[AssetType, string, string]> = [
    ["phone", "+37069199199", "+3706***9199"],
    ["phone", "+14155552671", "+1415***2671"],
    ["phone", "+8613800138000", "+8613***8000"],
    ["phone", "+4930901820", "+4930***1820"],
    ["phone", "+6834002", "+68***02"],
    ["email", "john.doe@example.com", "j***e@example.com"],
    ["email", "j@example.com", "j***@example.com"],
    ["email", "ab@x.io", "a***b@x.io"],
    ["email", "john.doe+tag@example.com", "j***g@example.com"],
    ["account", "user.name@example.com", "u***e@example.com"],
    ["account", "ACCT-123456789", "ACCT***6789"],
    ["account", "ABC123", "A***"],
    ["domain", "example.com", "exam***.com"],
    ["domain", "abc.de", "a***"],
    ["domain", "abcde.io", "a***"],
    ["domain", "abcdef.io", "abcd***f.io"],
    ["wallet", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x5a***eAed"],
    ["wallet", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "1A1z***vfNa"],
    ["social", "johndoe", "j***"],
    ["social", "john.doe_99", "john***e_99"],
    ["telegram_bot", "@MyTestBot", "@MyT***tBot"],
    ["telegram_bot", "@mybot", "@***"],
  ];
  it.each(cases)("masks %s %s as %s", (type, value, expected) => {
    expect(maskIdentifier(type, value)).toBe(expected);
  });

  it("keeps 4 + 4 for anything longer than 8 and first char for 8 or fewer", () => {
    expect(maskIdentifier("social", "abcdefgh")).toBe("a***");
    expect(maskIdentifier("social", "abcdefghi")).toBe("abcd***fghi");
  });

  it("masks a normalized value end to end", () => {
    const phone = normalizeIdentifier("phone", "sms", "+370 691 99199");
    expect(maskIdentifier("phone", phone.value)).toBe("+3706***9199");
    const email = normalizeIdentifier("email", "email", "John.Doe@Example.COM");
    expect(maskIdentifier("email", email.value)).toBe("j***e@example.com");
  });
});
