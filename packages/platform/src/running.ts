/** A started service, as start-all and the tests hold it. */
export interface RunningService {
  url: string;
  close(): Promise<void>;
}
