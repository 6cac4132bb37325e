import type { PageProps } from '../App';

export function TreatmentsPage(_props: PageProps) {
  return <p>Coming next.</p>;
}
