import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";

/** Date → protobuf Timestamp (undefined stays undefined). */
export const ts = (d: Date | null | undefined): Timestamp | undefined => (d ? timestampFromDate(d) : undefined);

/** protobuf Timestamp → Date (undefined stays undefined). */
export const toDate = (t: Timestamp | undefined): Date | undefined => (t ? timestampDate(t) : undefined);

/** ISO 8601 UTC with milliseconds, or undefined. */
export const iso = (t: Timestamp | Date | undefined | null): string | undefined => (t ? (t instanceof Date ? t : timestampDate(t)).toISOString() : undefined);
