// The limiter lives in the platform package (the verification service counts sends with it too).
export { MemoryRateLimiter, RedisRateLimiter, type RateDecision, type RateLimiter } from "@icv/platform";
