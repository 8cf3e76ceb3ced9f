import { routes } from '@surveyor/contract';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import type { z } from 'zod';
import type { serviceFilters } from '@surveyor/contract';
import { call } from '../../lib/api';
import { serviceKeys } from '../../lib/keys';

/** The services filters as the URL and the API take them. */
export type ServiceFilters = { [K in keyof typeof serviceFilters]?: z.input<(typeof serviceFilters)[K]> };

/** How many services the filters select (`GET /api/v1/services/count`, internal); under the services' root, so a change refreshes it. */
export function useServiceCount(filters: ServiceFilters) {
  return useQuery({
    queryKey: [...serviceKeys.all, 'count', filters] as const,
    queryFn: ({ signal }) => call(routes.countServices, { query: filters }, { signal }),
    placeholderData: keepPreviousData,
  });
}
