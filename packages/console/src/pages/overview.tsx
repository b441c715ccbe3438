import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale } from "chart.js";
import { useEffect, useRef } from "preact/hooks";
import { call } from "../api.ts";
import { Failure, Frame, Table } from "../ui.tsx";
import { useLoad } from "../ui.tsx";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend);

interface Stats {
  period: string;
  bucket: "hour" | "day";
  total: number;
  by_status: Record<string, number>;
  by_channel: Record<string, number>;
  success_rate: number | null;
  buckets: { start: string; by_status: Record<string, number> }[];
}
const STATUSES = ["pending", "verified", "suspended", "failed", "expired", "revoked"];
const COLORS: Record<string, string> = {
  pending: "#8c959f",
  verified: "#1a7f37",
  suspended: "#9a6700",
  failed: "#b42318",
  expired: "#57606a",
  revoked: "#6639ba",
};
const PERIODS = [
  ["24h", "Last 24 hours"],
  ["30d", "Last 30 days"],
] as const;

/** A stacked bar chart of one period's buckets by status (Chart.js), with a text alternative: the tables hold the numbers. */
function StatusChart({ stats, label }: { stats: Stats; label: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const labels = stats.buckets.map((b) =>
      stats.bucket === "hour"
        ? new Date(b.start).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
        : new Date(b.start).toLocaleDateString([], { month: "short", day: "numeric" }),
    );
    const chart = new Chart(canvas.current!, {
      type: "bar",
      data: { labels, datasets: STATUSES.map((s) => ({ label: s, data: stats.buckets.map((b) => b.by_status[s] ?? 0), backgroundColor: COLORS[s] })) },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
        plugins: { legend: { position: "bottom" } },
      },
    });
    return () => chart.destroy();
  }, [stats]);
  return (
    <figure class="chart" data-chart={stats.period} data-buckets={stats.buckets.length}>
      <div class="chart-box">
        <canvas ref={canvas} role="img" aria-label={`${label}: ${stats.total} verifications by status, per ${stats.bucket}`} />
      </div>
      <figcaption>{`${label}, per ${stats.bucket}`}</figcaption>
    </figure>
  );
}

/** Counts by status and channel, success rate, and the charts over 24 h and 30 days: grouped by the verification service. */
export function OverviewPage({ env }: { env: string }) {
  const { data, error } = useLoad(
    async () => ({
      periods: await Promise.all(PERIODS.map(([p]) => call<Stats>("GET", `/${env}/stats/verifications?period=${p}`))),
      deliveries: await call("GET", `/${env}/webhook-deliveries/stats`).catch(() => undefined),
    }),
    env,
  );
  if (error)
    return (
      <Frame title="Overview">
        <Failure error={error} />
      </Frame>
    );
  if (!data) return <p>Loading…</p>;
  const { periods, deliveries: d } = data;
  const channels = [...new Set(periods.flatMap((p) => Object.keys(p.by_channel)))].sort();
  return (
    <Frame title={`Overview (${env})`}>
      <Table head={["Verifications", ...STATUSES, "Success rate"]}>
        {periods.map((p, i) => (
          <tr>
            <th scope="row">{PERIODS[i][1]}</th>
            {STATUSES.map((s) => (
              <td>{String(p.by_status[s] ?? 0)}</td>
            ))}
            <td data-rate={PERIODS[i][1]}>{p.success_rate === null ? "—" : `${p.success_rate.toFixed(1)} %`}</td>
          </tr>
        ))}
      </Table>
      <p>Success rate: verifications that showed control (verified, suspended or revoked since) out of those that finished (those and failed or expired).</p>
      <div class="charts">
        {periods.map((p, i) => (
          <StatusChart stats={p} label={PERIODS[i][1]} />
        ))}
      </div>
      <h2>By channel</h2>
      {channels.length ? (
        <Table head={["Channel", "24 h", "30 days"]}>
          {channels.map((c) => (
            <tr>
              <th scope="row">{c}</th>
              {periods.map((p) => (
                <td>{String(p.by_channel[c] ?? 0)}</td>
              ))}
            </tr>
          ))}
        </Table>
      ) : (
        <p>No verifications in the last 30 days.</p>
      )}
      {d ? <p>{`Webhook deliveries: ${d.delivered} delivered, ${d.failed} failed, ${d.pending} pending (${d.success_rate} % delivered).`}</p> : undefined}
    </Frame>
  );
}
