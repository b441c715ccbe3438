/**
 * GET /favicon.ico: the service's icon (a white check on the hosted page's green), so that the
 * request every browser makes on its own is answered instead of a 404. An ICO file holding one
 * 32×32 PNG (every browser since IE 11 reads PNG inside ICO).
 */
import type { Express } from "express";

const PNG_32 =
  "iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAYAAABzenr0AAACuUlEQVR4AcXBQUiTYQCA4Xef+4wZBUMIVikZrCEkoTLrVh2yWGTI9JAEK5CETQ8WQhcp6BSDOrgNyh3cZQSzg0Qr9NApcklFp1qDjE0dBPaDZhY/bjlUHONvTZ3b8+iq7nSRpRZwATbAAkiKQwWiQBjwAnHW6dnUDfgASfFJ4DhwHOgHnICfVXrWdAPDlIYEhlnjF0At4KP0fECtAFyApPQk4BKAjfKxCcBC+VgEINkl5moT5moTeUg9u+SBzUFPSysZj96OczMcQItgF9w+3U5PSysbelpaMVeb0CIosuvNZxk820GhBEVkszThudRNrsdTE8Tmk2gRFEnzoaMEOnrJNfZpiv7nI/yLoAgO768m0NFHldxDtsnEFxyhIfLR8w+NB+twnbpAhnfyJR/mptEiRQWBzl7qjAfINq18xxHyoKZWyEePBqHTEbpyC9M+IxkXzI3Yg24iiRi5Ap19nKo5RrZf6h8co0PMLMzzPwINJ0xHMO0zssFo2MvTrgFO1pjJ9vDiNS7XW8nlGPXwbvYrhRBo+Jj8RnJRIZvRsJenXQOcrDGTcft0Ozes58jV+8xPOPqeQlXIMw13yZEGIjMx2uqtGGQlGwyykrZ6K8rvn9w/f5Vc916N4nnzgq2okGca7qJhduEHr+Ofaau3YpCVbDDISmyWJnI9nppgcOIJWyXII5KIYQ+6UZaXyGfs0xT9z0fYDsF/RBIx7EE3yvISWiYTX3CEhtguQQEiiRj2oBtleYls08p3HCEPamqF7RIUKJKIYQ+6SS4qZCQXFRyjQ8wszLMTuqo7XWm2QOh0nDAd4WPyG6l0mp0SgMoWpNJpPsxNk0qnKQJVAFHKJyqAMOUTFoAXUCk9FfAKIA44KT0nENezxs8aHyDZXSrgBPys0rPJD4wDLsAGWABJcahAFAgDXiDOur8R89HwjTJqhQAAAABJRU5ErkJggg==";

/** ICONDIR (reserved, type 1 = icon, 1 image), one ICONDIRENTRY (32×32, 1 plane, 32 bpp, size, offset 22), then the PNG. */
function ico(png: Buffer): Buffer {
  const head = Buffer.alloc(22);
  head.writeUInt16LE(1, 2);
  head.writeUInt16LE(1, 4);
  head.writeUInt8(32, 6);
  head.writeUInt8(32, 7);
  head.writeUInt16LE(1, 10);
  head.writeUInt16LE(32, 12);
  head.writeUInt32LE(png.length, 14);
  head.writeUInt32LE(22, 18);
  return Buffer.concat([head, png]);
}

export function mountFavicon(app: Express): void {
  const body = ico(Buffer.from(PNG_32, "base64"));
  app.get("/favicon.ico", (_req, res) => {
    res.setHeader("Cache-Control", "public, max-age=86400");
    res.type("image/x-icon").send(body);
  });
}
