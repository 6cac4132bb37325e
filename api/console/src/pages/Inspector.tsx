import type { PageProps } from '../App';

export function InspectorPage(_props: PageProps) {
  return <p>Coming next.</p>;
}
