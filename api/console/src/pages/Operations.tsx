import type { PageProps } from '../App';

export function OperationsPage(_props: PageProps) {
  return <p>Coming next.</p>;
}
